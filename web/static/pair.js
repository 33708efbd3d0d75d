// Spends the pairing code in this page's URL for a session cookie, then opens the
// cockpit. The code leaves the address bar and the history at once.
(function () {
  "use strict";
  var code = new URLSearchParams(location.search).get("code") || "";
  history.replaceState(null, "", "/pair");
  var msg = document.getElementById("msg");
  if (!code) { msg.textContent = "This pairing link has no code; run orcr web pair again."; return; }
  fetch("/pair", {method: "POST", credentials: "same-origin",
    headers: {"Content-Type": "application/json", "X-Orcr": "1"}, body: JSON.stringify({code: code})})
    .then(function (r) { return r.json().then(function (b) { return {ok: r.ok, b: b}; }); })
    .then(function (r) {
      if (r.ok) { location.replace("/"); return; }
      msg.textContent = (r.b && r.b.error && r.b.error.message) || "Pairing failed; run orcr web pair again.";
    })
    .catch(function (e) { msg.textContent = "Pairing failed: " + e; });
})();
