// orcr's service worker: shows what the server pushes (an agent blocked, a plan
// drafted, a run asking, failing or done) and opens the page on a tap.
"use strict";
self.addEventListener("push", function (ev) {
  var d = {};
  try { d = ev.data ? ev.data.json() : {}; } catch (e) { d = {title: "orcr", body: ev.data ? ev.data.text() : ""}; }
  ev.waitUntil(self.registration.showNotification(d.title || "orcr", {body: d.body || "", tag: d.tag || d.kind || "orcr", data: {seq: d.seq}}));
});
self.addEventListener("notificationclick", function (ev) {
  ev.notification.close();
  ev.waitUntil(self.clients.matchAll({type: "window"}).then(function (ws) {
    for (var i = 0; i < ws.length; i++) if ("focus" in ws[i]) return ws[i].focus();
    return self.clients.openWindow("/");
  }));
});
