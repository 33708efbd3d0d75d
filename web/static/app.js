// orcr's web cockpit. Plain JS, no framework: the agents from agent.list kept current
// by the event stream, the things that need the user with one button per real option,
// an agent's live screen (rendered on the server) and a box to steer it.
(function () {
  "use strict";
  // The server puts this script inline at the top of the page's head (allowed by its
  // hash in the CSP): it runs as the HTML is parsed, before the style sheets are in
  // and with no round trip of its own, and asks for the agents first — their answer
  // is the page's longest wait. web.agents answers what a row draws (~100 bytes an
  // agent, not agent.list's ~1 KB records); its X-Orcr-Seq header is the newest
  // event's seq before the list was made, so the events after it miss nothing.
  // Drawing waits for the document below (start).
  performance.mark("orcr:script");
  var firstList = fetch("/api/v1/web.agents", {method: "POST", credentials: "same-origin",
    headers: {"Content-Type": "application/json", "X-Orcr": "1"}, body: "{}"});
  // Its body is read and parsed as soon as it is in, while the document may still be
  // parsing: drawing waits for the document, parsing need not.
  var firstBody = firstList.then(function (r) {
    return r.json().catch(function () { return {}; }).then(function (b) { return {r: r, b: b}; });
  });

  function start() {
    var $ = function (id) { return document.getElementById(id); };
    var ENDED = {exited: 1, killed: 1, failed: 1, lost: 1};
    var agents = new Map(); // path -> newest record
    var plans = [], runs = [];
    var selected = null; // agent id shown in the panel
    var screenES = null, eventsES = null;
    var lastSeq = 0;
    var MAXCARDS = 50;

    var ESC = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}, SPECIAL = /[&<>"']/;
    function esc(s) {
      s = String(s == null ? "" : s);
      if (!SPECIAL.test(s)) return s; // paths, ids and states almost never need it: 4,000 calls a draw
      return s.replace(/[&<>"']/g, function (c) { return ESC[c]; });
    }

    function toast(text) {
      var t = $("toast");
      t.textContent = text; t.hidden = false;
      clearTimeout(toast.tm); toast.tm = setTimeout(function () { t.hidden = true; }, 5000);
    }

    // api calls a socket method through the gateway; the session cookie goes along and
    // the X-Orcr header marks the call as this page's own.
    function api(method, params) {
      return fetch("/api/v1/" + method, {method: "POST", credentials: "same-origin",
        headers: {"Content-Type": "application/json", "X-Orcr": "1"}, body: JSON.stringify(params || {})})
        .then(function (r) {
          return r.json().catch(function () { return {}; }).then(function (b) {
            if (r.status === 401) unpaired();
            if (!r.ok) { var e = new Error((b.error && b.error.message) || r.statusText); e.code = b.error && b.error.code; throw e; }
            return b;
          });
        });
    }

    function unpaired() {
      $("pairing").hidden = false;
      $("conn").textContent = "not paired";
    }

    // ---- the tree ----
    function upsert(a) {
      if (!a || !a.path) return;
      var old = agents.get(a.path);
      // An older record of the path (a superseded agent's late event) does not replace
      // the newest. web.agents' rows carry no createdAt: ids are UUIDv7, in creation order.
      if (old && old.id !== a.id && (old.createdAt && a.createdAt ? old.createdAt > a.createdAt : old.id > a.id)) return;
      agents.set(a.path, a);
    }

    var dirty = false;
    function schedule() {
      if (dirty) return;
      dirty = true;
      setTimeout(function () { dirty = false; render(); }, 16); // not rAF: it waits for a frame that may not come soon

    }

    // One collator: localeCompare with options builds one per call (2 s for 1,000 rows).
    var collator = new Intl.Collator(undefined, {numeric: true});
    function natural(a, b) { return collator.compare(a, b); }

    function rollups(list) {
      // For every path that is a row, the states below it. Only rows' paths are
      // counted: a fleet under team directories that are not agents themselves
      // built 2,000 prefixes a draw for nothing.
      var roll = new Map();
      list.forEach(function (a) { roll.set(a.path, null); });
      list.forEach(function (a) {
        for (var j = a.path.lastIndexOf("/"); j > 0; j = a.path.lastIndexOf("/", j - 1)) {
          var p = a.path.slice(0, j);
          if (!roll.has(p)) continue;
          var r = roll.get(p);
          if (!r) { r = {}; roll.set(p, r); }
          r[a.state] = (r[a.state] || 0) + 1;
        }
      });
      return roll;
    }

    function render() {
      var t0 = performance.now();
      try { draw(); } finally { window.orcrDrawMs = performance.now() - t0; } // read by the page benchmark
    }

    function draw() {
      var t0 = performance.now();
      var showEnded = $("ended").checked;
      var f = $("filter").value.trim();
      var all = Array.from(agents.values());
      var counts = {};
      all.forEach(function (a) { counts[a.state] = (counts[a.state] || 0) + 1; });
      var list = all.filter(function (a) {
        return (showEnded || !ENDED[a.state]) && (!f || a.path.indexOf(f) >= 0);
      }).sort(function (a, b) { return natural(a.path, b.path); });
      var t1 = performance.now();
      var roll = rollups(list);
      var h = [];
      list.forEach(function (a) {
        var depth = 0;
        for (var j = a.path.indexOf("/"); j >= 0 && depth < 9; j = a.path.indexOf("/", j + 1)) depth++;
        var r = roll.get(a.path), rs = "";
        if (r) rs = Object.keys(r).sort().map(function (s) { return r[s] + " " + s; }).join(" · ");
        h.push('<div class="row d' + Math.min(depth, 9) + (a.id === selected ? " sel" : "") + '" role="listitem" data-id="' + esc(a.id) +
          '"><span class="path">' + esc(a.path) + '</span>' +
          (rs ? '<span class="roll">' + esc(rs) + '</span>' : "") +
          '<span class="st s-' + esc(a.state) + '">' + esc(a.state) + '</span></div>');
      });
      var html = h.join("");
      var t2 = performance.now();
      if (html !== render.last) { render.last = html; $("tree").innerHTML = html; }
      var t3 = performance.now();
      $("summary").textContent = all.length + " agents" + Object.keys(counts).sort().map(function (s) {
        return " · " + counts[s] + " " + s;
      }).join("");
      renderNeeds();
      if (selected) renderAgentHead();
      // Where a draw's time went, for the page benchmark: sorting, building the rows'
      // HTML, the tree's DOM, the rest ("needs you").
      var t4 = performance.now();
      window.orcrDrawParts = [t1 - t0, t2 - t1, t3 - t2, t4 - t3].map(Math.round).join("/");
    }

    // ---- needs you ----
    function optionButtons(a) {
      var b = a.blocked, h = [];
      if (!b) return "";
      if (b.kind === "limit") return '<div class="muted">waits for a usage limit' + (b.resetsAt ? " until " + esc(new Date(b.resetsAt).toLocaleString()) : "") + "</div>";
      var opts = b.options || [];
      var withText = false;
      opts.forEach(function (o, i) {
        var cls = {allow_once: "allow", allow_always: "always", deny: "deny"}[o.meaning] || "";
        var label = {allow_once: "Allow", allow_always: "Always", deny: "Deny"}[o.meaning] || o.label;
        if (o.text || o.meaning === "deny") withText = true;
        h.push('<button class="' + cls + '" data-act="answer" data-id="' + esc(a.id) + '" data-meaning="' + esc(o.meaning) +
          '" data-option="' + (i + 1) + '" title="' + esc(o.label) + '">' + esc(label) + "</button>");
      });
      if (!opts.length) {
        h.push('<input data-reason="' + esc(a.id) + '" placeholder="your answer">');
        h.push('<button data-act="answer-text" data-id="' + esc(a.id) + '">Answer</button>');
      } else if (withText) {
        h.push('<input data-reason="' + esc(a.id) + '" placeholder="reason / what to do instead (optional)">');
      }
      return '<div class="acts">' + h.join("") + "</div>";
    }

    function renderNeeds() {
      var h = [];
      var blocked = Array.from(agents.values()).filter(function (a) { return a.state === "blocked"; })
        .sort(function (a, b) { return natural(a.path, b.path); });
      // At most MAXCARDS cards: a fleet where hundreds wait is answered by glob from the
      // CLI (orcr agent answer 'team/**' --all); the rest are counted.
      var more = blocked.length - MAXCARDS;
      blocked.slice(0, MAXCARDS).forEach(function (a) {
          var b = a.blocked || {};
          h.push('<div class="card" data-card="' + esc(a.id) + '"><div><span class="path">' + esc(a.path) + '</span> <span class="muted">' +
            esc(b.kind || "blocked") + '</span> <button class="icon" data-act="open" data-id="' + esc(a.id) + '" title="screen">▤</button></div>' +
            '<div class="what">' + esc(b.question || "") + (b.detail ? " <b>" + esc(b.detail) + "</b>" : "") + "</div>" +
            optionButtons(a) + "</div>");
        });
      if (more > 0) h.push('<div class="muted">and ' + more + " more blocked agents (filter the tree, or answer them by glob: orcr agent answer GLOB --all)</div>");
      plans.filter(function (p) { return p.state === "drafted"; }).forEach(function (p) {
        h.push('<div class="card"><div>plan <span class="path">' + esc(p.name) + '</span> <span class="muted">drafted</span></div>' +
          '<div class="what">' + esc(p.request) + '</div><pre hidden data-plan-text="' + esc(p.name) + '"></pre><div class="acts">' +
          '<button data-act="plan-show" data-name="' + esc(p.name) + '">Show</button>' +
          '<button class="allow" data-act="plan-approve" data-name="' + esc(p.name) + '">Approve</button>' +
          '<input data-reason="plan:' + esc(p.name) + '" placeholder="reason to reject">' +
          '<button class="deny" data-act="plan-reject" data-name="' + esc(p.name) + '">Reject</button></div></div>');
      });
      runs.forEach(function (r) {
        (r.milestones || []).forEach(function (m) {
          var key = r.name + "/" + m.id;
          if (m.state === "asking") {
            h.push('<div class="card"><div>run <span class="path">' + esc(key) + '</span> <span class="muted">asks</span></div>' +
              '<div class="what">' + esc(m.question) + '</div><div class="acts"><input data-reason="run:' + esc(key) + '" placeholder="your answer">' +
              '<button data-act="run-answer" data-run="' + esc(r.name) + '" data-m="' + esc(m.id) + '">Answer</button></div></div>');
          } else if (m.state === "failed") {
            h.push('<div class="card"><div>run <span class="path">' + esc(key) + '</span> <span class="muted">failed</span></div>' +
              '<div class="what">' + esc(m.title) + (m.reason ? " — " + esc(m.reason) : "") + '</div><div class="acts">' +
              '<button class="allow" data-act="run-retry" data-run="' + esc(r.name) + '" data-m="' + esc(m.id) + '">Retry</button>' +
              '<button data-act="run-hold" data-run="' + esc(r.name) + '" data-m="' + esc(m.id) + '">Hold</button></div></div>');
          }
        });
      });
      // Keep what the user is typing in a reason box across a redraw.
      var typed = {};
      $("needs-list").querySelectorAll("input[data-reason]").forEach(function (i) { if (i.value) typed[i.dataset.reason] = i.value; });
      var focus = document.activeElement && document.activeElement.dataset && document.activeElement.dataset.reason;
      var html = h.join("");
      if (html !== renderNeeds.last) {
        renderNeeds.last = html;
        $("needs-list").innerHTML = html;
        $("needs-list").querySelectorAll("input[data-reason]").forEach(function (i) {
          if (typed[i.dataset.reason]) i.value = typed[i.dataset.reason];
          if (focus && i.dataset.reason === focus) i.focus();
        });
      }
      $("needs").hidden = h.length === 0;
      $("needs-n").textContent = h.length ? String(h.length + Math.max(0, more) - (more > 0 ? 1 : 0)) : "";
    }

    function reasonOf(key) {
      var i = document.querySelector('input[data-reason="' + CSS.escape(key) + '"]');
      return i ? i.value.trim() : "";
    }

    function act(p, done) {
      return p.then(function (r) { if (done) toast(done); return r; }).catch(function (e) { toast(e.message); });
    }

    document.addEventListener("click", function (ev) {
      var el = ev.target.closest("[data-act],[data-tab],.row,[data-key]");
      if (!el) return;
      if (el.dataset.tab) return showTab(el.dataset.tab);
      if (el.classList.contains("row")) return openAgent(el.dataset.id);
      if (el.dataset.key) return sendKey(el.dataset.key);
      var id = el.dataset.id, name = el.dataset.name;
      switch (el.dataset.act) {
        case "open": return openAgent(id);
        case "answer": {
          var p = {target: id}, m = el.dataset.meaning, why = reasonOf(id);
          if (m === "allow_once") p.allow = true;
          else if (m === "allow_always") p.always = true;
          else if (m === "deny") p.deny = true;
          else p.option = Number(el.dataset.option);
          if (why && (m === "deny" || p.option)) p.text = why;
          el.disabled = true;
          return act(api("agent.answer", p), "answered: " + el.textContent);
        }
        case "answer-text": {
          var t = reasonOf(id);
          if (!t) return toast("type the answer first");
          return act(api("agent.answer", {target: id, text: t}), "answered");
        }
        case "plan-show":
          return act(api("plan.get", {name: name}).then(function (r) {
            var pre = document.querySelector('pre[data-plan-text="' + CSS.escape(name) + '"]');
            if (pre) { pre.textContent = (r.text || JSON.stringify(r, null, 2)); pre.hidden = !pre.hidden; }
          }));
        case "plan-approve": return act(api("plan.approve", {name: name}), "approved " + name).then(refreshSide);
        case "plan-reject": {
          var reason = reasonOf("plan:" + name);
          if (!reason) return toast("say why in the box: the lead redrafts from it");
          return act(api("plan.reject", {name: name, reason: reason}), "rejected " + name).then(refreshSide);
        }
        case "run-answer": {
          var a = reasonOf("run:" + el.dataset.run + "/" + el.dataset.m);
          if (!a) return toast("type the answer first");
          return act(api("run.answer", {name: el.dataset.run, milestone: el.dataset.m, text: a}), "answered").then(refreshSide);
        }
        case "run-retry": return act(api("run.retry", {name: el.dataset.run, milestones: [el.dataset.m]}), "retrying").then(refreshSide);
        case "run-hold": return act(api("run.hold", {name: el.dataset.run, milestones: [el.dataset.m]}), "held").then(refreshSide);
      }
    });

    // ---- one agent ----
    function byId(id) {
      var found = null;
      agents.forEach(function (a) { if (a.id === id) found = a; });
      return found;
    }

    function renderAgentHead() {
      var a = byId(selected);
      if (!a) return;
      $("agent-path").textContent = a.path;
      var st = $("agent-state");
      st.textContent = a.state; st.className = "st s-" + a.state;
      var html = a.state === "blocked" ? '<div class="card" data-card="' + esc(a.id) + '"><div class="what">' +
        esc((a.blocked && a.blocked.question) || "") + " <b>" + esc((a.blocked && a.blocked.detail) || "") + "</b></div>" + optionButtons(a) + "</div>" : "";
      if (html !== renderAgentHead.last) { renderAgentHead.last = html; $("agent-blocked").innerHTML = html; }
    }

    function openAgent(id) {
      selected = id;
      $("agent").hidden = false;
      $("screen").innerHTML = "";
      $("steer-msg").textContent = "";
      renderAgentHead.last = null;
      render();
      if (screenES) screenES.close();
      screenES = new EventSource("/api/v1/screen?target=" + encodeURIComponent(id));
      screenES.addEventListener("screen", function (ev) {
        var f = JSON.parse(ev.data);
        $("screen").innerHTML = f.html; // escaped and styled by the server
        var a = byId(f.id);
        if (a) { a.state = f.state; a.blocked = f.blocked; renderAgentHead(); }
      });
      if (window.innerWidth < 1000) $("agent").scrollIntoView({block: "start"});
    }

    $("agent-close").addEventListener("click", function () {
      selected = null; $("agent").hidden = true;
      if (screenES) { screenES.close(); screenES = null; }
      render();
    });

    $("steer").addEventListener("submit", function (ev) {
      ev.preventDefault();
      var t = $("steer-text").value;
      if (!selected || !t) return;
      // The server refuses text to an agent that waits for a choice (agent_blocked): text
      // never answers a prompt by accident; the buttons do.
      api("agent.send", {target: selected, text: t, enter: true}).then(function () {
        $("steer-text").value = ""; $("steer-msg").textContent = "";
      }).catch(function (e) {
        $("steer-msg").textContent = e.code === "agent_blocked" ? "It waits for a choice: use the buttons above. " + e.message : e.message;
      });
    });

    function sendKey(k) {
      if (!selected) return;
      api("agent.send", {target: selected, keys: [k]}).catch(function (e) { $("steer-msg").textContent = e.message; });
    }

    $("agent-kill").addEventListener("click", function () {
      var a = byId(selected);
      if (a && confirm("Stop " + a.path + "?")) act(api("agent.kill", {glob: a.id}), "stopped " + a.path);
    });

    // ---- tabs: runs, usage, listeners ----
    var tab = "agents";
    function showTab(t) {
      tab = t;
      document.querySelectorAll("#tabs button").forEach(function (b) { b.classList.toggle("on", b.dataset.tab === t); });
      ["agents", "runs", "usage", "listeners"].forEach(function (n) { $("tab-" + n).hidden = n !== t; });
      refreshSide();
    }

    function dur(s) {
      if (!s) return "";
      var m = Math.round(s / 60);
      return m >= 60 ? Math.floor(m / 60) + "h" + (m % 60) + "m" : m + "m";
    }

    function renderRuns() {
      if (!runs.length) { $("runs").innerHTML = '<p class="muted">No runs. Start one with orcr run start PLAN.</p>'; return; }
      $("runs").innerHTML = runs.map(function (r) {
        return '<h2>' + esc(r.name) + ' <span class="st">' + esc(r.state) + '</span> <span class="muted">' + esc(r.feature) + "</span></h2>" +
          "<table><tr><th>milestone</th><th>state</th><th>coder</th><th>rounds</th><th>time</th></tr>" +
          (r.milestones || []).map(function (m) {
            return "<tr><td>" + esc(m.id) + " " + esc(m.title) + "</td><td>" + esc(m.state) + (m.waits ? ' <span class="muted">' + esc(m.waits) + "</span>" : "") +
              "</td><td>" + esc(m.coder) + " " + esc(m.model) + "</td><td>" + (m.rounds ? m.rounds.check + "/" + m.rounds.review + "/" + m.rounds.conflict : "") +
              "</td><td>" + dur(m.elapsedSeconds) + "</td></tr>";
          }).join("") + "</table>" + (r.summary ? "<pre>" + esc(r.summary) + "</pre>" : "");
      }).join("");
    }

    function renderUsage(res) {
      var h = [];
      (res.accounts || []).forEach(function (a) {
        h.push("<h2>" + esc(a.provider) + " · " + esc(a.label) + ' <span class="muted">' + (a.live || 0) + " live" + (a.problem ? " · " + esc(a.problem) : "") + "</span></h2>");
        if (!(a.windows || []).length) h.push('<p class="muted">' + (a.perToken ? "billed per token" : "no usage windows seen yet") + "</p>");
        h.push("<table>" + (a.windows || []).map(function (w) {
          var pct = Math.max(0, Math.min(100, w.usedPct || 0));
          return "<tr><td>" + esc(w.window) + (w.family ? " " + esc(w.family) : "") + '</td><td><div class="meter"><i class="w0' +
            (pct >= 95 ? " full" : pct >= 80 ? " warn" : "") + '" data-w="' + pct + '"></i></div></td><td>' + pct.toFixed(0) + "%</td><td>" +
            esc(w.state) + (w.resetsAt ? ' <span class="muted">resets ' + esc(new Date(w.resetsAt).toLocaleString()) + "</span>" : "") + "</td></tr>";
        }).join("") + "</table>");
      });
      $("usage").innerHTML = h.join("") || '<p class="muted">No accounts.</p>';
      $("usage").querySelectorAll("[data-w]").forEach(function (i) { i.style.width = i.dataset.w + "%"; });
    }

    function renderListeners(res) {
      var ls = res.listeners || [];
      $("listeners").innerHTML = ls.length ? "<table><tr><th>listener</th><th>state</th><th>source</th><th>fires</th><th>last poll</th></tr>" + ls.map(function (l) {
        return "<tr><td>" + esc(l.name) + "</td><td>" + esc(l.state) + (l.lastError ? ' <span class="muted">' + esc(l.lastError) + "</span>" : "") +
          "</td><td>" + esc(l.source) + "</td><td>" + (l.fires || 0) + "</td><td>" + (l.lastPoll ? esc(new Date(l.lastPoll).toLocaleTimeString()) : "") + "</td></tr>";
      }).join("") + "</table>" : '<p class="muted">No listeners.</p>';
    }

    // refreshSide reloads plans and runs (for "needs you") and the open tab's data.
    function refreshSide() {
      api("plan.list", {}).then(function (r) { plans = r.plans || []; schedule(); }).catch(function () {});
      api("run.list", {}).then(function (r) { runs = r.runs || []; if (tab === "runs") renderRuns(); schedule(); }).catch(function () {});
      if (tab === "usage") api("account.list", {}).then(renderUsage).catch(function (e) { $("usage").textContent = e.message; });
      if (tab === "listeners") api("listener.list", {}).then(renderListeners).catch(function (e) { $("listeners").textContent = e.message; });
    }
    var sideTimer = null;
    function refreshSideSoon() { clearTimeout(sideTimer); sideTimer = setTimeout(refreshSide, 300); }

    // ---- events ----
    function connect() {
      if (eventsES) eventsES.close();
      eventsES = new EventSource("/api/v1/events?after=" + lastSeq);
      eventsES.onopen = function () { if (!performance.getEntriesByName("orcr:events").length) performance.mark("orcr:events"); $("conn").textContent = "live"; $("conn").className = "conn on"; };
      eventsES.onerror = function () { $("conn").textContent = "reconnecting"; $("conn").className = "conn off"; };
      eventsES.onmessage = function () {};
      ["agent.spawned", "agent.state", "agent.updated", "agent.killed", "agent.removed"].forEach(function (name) {
        eventsES.addEventListener(name, function (ev) {
          var e = JSON.parse(ev.data);
          if (e.seq) lastSeq = e.seq;
          if (name === "agent.removed" && e.agent) {
            var cur = agents.get(e.agent.path);
            if (cur && cur.id === e.agent.id) agents.delete(e.agent.path);
          } else upsert(e.agent);
          schedule();
        });
      });
      ["plan.state", "plan.edited", "run.event", "run.notify"].forEach(function (name) {
        eventsES.addEventListener(name, function (ev) { lastSeq = Number(ev.lastEventId) || lastSeq; refreshSideSoon(); });
      });
    }

    // ---- Web Push ----
    // The service worker shows what the server pushes (an agent blocked, a plan
    // drafted, a run asking, failing or done). The subscription is made with the
    // server's VAPID key and posted to the gateway, which keeps it for this paired
    // browser; "Notify me" asks the permission (browsers want a tap for that).
    function b64bytes(s) {
      s = s.replace(/-/g, "+").replace(/_/g, "/");
      var raw = atob(s + "===".slice((s.length + 3) % 4));
      var out = new Uint8Array(raw.length);
      for (var i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
      return out;
    }
    function postSub(sub) {
      return fetch("/push/subscribe", {method: "POST", credentials: "same-origin",
        headers: {"Content-Type": "application/json", "X-Orcr": "1"}, body: JSON.stringify(sub.toJSON ? sub.toJSON() : sub)})
        .then(function (r) { if (!r.ok) throw new Error("push subscribe: " + r.status); document.body.dataset.push = "on"; $("push").hidden = true; });
    }
    function subscribe(reg) {
      return fetch("/push/key", {credentials: "same-origin"}).then(function (r) { return r.json(); }).then(function (k) {
        if (!k.key) throw new Error("no push key");
        return reg.pushManager.getSubscription().then(function (old) {
          return old || reg.pushManager.subscribe({userVisibleOnly: true, applicationServerKey: b64bytes(k.key)});
        });
      }).then(postSub);
    }
    function setupPush() {
      if (!("serviceWorker" in navigator) || !("PushManager" in window) || !window.isSecureContext) return;
      navigator.serviceWorker.register("/sw.js").then(function () { return navigator.serviceWorker.ready; }).then(function (reg) {
        document.body.dataset.sw = "ready";
        var btn = $("push");
        btn.onclick = function () {
          Notification.requestPermission().then(function (p) {
            if (p !== "granted") { toast("notifications are blocked for this page"); return; }
            return subscribe(reg);
          }).catch(function (e) { toast("push: " + e.message); });
        };
        if (Notification.permission === "granted") return subscribe(reg).catch(function (e) { document.body.dataset.push = "failed"; btn.hidden = false; toast("push: " + e.message); });
        if (Notification.permission !== "denied") btn.hidden = false;
      }).catch(function () {});
    }

    $("filter").addEventListener("input", schedule);
    $("ended").addEventListener("change", schedule);

    // load draws the tree from one agent.list (its X-Orcr-Seq header is the newest
    // event's seq before the list was made, so the events after it miss nothing), then
    // follows the events and reads the side data — after the first draw, not before it.
    function load() {
      firstBody.then(function (rb) {
        var r = rb.r, b = rb.b;
        if (r.status === 401) unpaired();
        if (!r.ok) { var e = new Error((b.error && b.error.message) || r.statusText); e.code = b.error && b.error.code; throw e; }
        lastSeq = Number(r.headers.get("X-Orcr-Seq")) || 0;
        return b;
      }).then(function (r) {
        performance.mark("orcr:list");
        (r.agents || []).forEach(upsert);
        render();
        performance.mark("orcr:drawn");
        connect();
        setTimeout(function () {
          refreshSide();
          setInterval(refreshSide, 30000);
          setupPush();
        }, 0);
      }).catch(function (e) { if (e.code !== "unauthorized") toast(e.message); });
    }
    load();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
