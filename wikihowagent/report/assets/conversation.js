// conversation.html#<chunk>/<conversation_id>: loads data/conv-<chunk>.js and shows one conversation.
(function () {
  "use strict";
  var main = document.getElementById("conversation");

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function add(parent, child) { parent.appendChild(child); return child; }
  function fail(msg) { main.textContent = ""; add(main, el("p", "err", msg)); }

  var hash = decodeURIComponent(location.hash.slice(1)), cut = hash.indexOf("/");
  if (cut < 0) { fail("No conversation given (expected conversation.html#<chunk>/<id>)."); return; }
  var chunk = Number(hash.slice(0, cut)), id = hash.slice(cut + 1);

  window.reportChunk = function (n, data) {
    var c = data[id];
    if (!c) { fail("Conversation " + id + " is not in data chunk " + n + "."); return; }
    render(c);
  };

  // The learner's post-test beside the tutorial: matched steps marked on both sides (from the score record).
  function postTest(parent, c, items) {
    var box = add(parent, el("div", "posttest"));
    add(box, el("h2", null, "Post-test"));
    var pt = c.posttest, post = pt.post || {}, byAnswer = {};
    add(box, el("p", "meta", "The learner model (" + (pt.model || "?") + ") wrote the steps from memory after " +
      "the conversation; prompt " + (pt.prompt_version || "?") + "."));
    (c.posttest_matches || []).forEach(function (m) {
      byAnswer[m[1]] = m;
      if (items[m[0]]) {
        items[m[0]].classList.add("recalled");
        add(items[m[0]], el("span", "badge recalled", "recalled as " + (m[1] + 1) + " (" + m[2].toFixed(2) + ")"));
      }
    });
    if (post.error) { add(box, el("p", "warn", "Not scored: " + post.error)); }
    var ol = add(box, el("ol"));
    (post.steps || []).forEach(function (s, i) {
      var li = add(ol, el("li", byAnswer[i] ? "recalled" : (c.posttest_matches.length || c.scored ? "extraneous" : null), s));
      if (byAnswer[i]) { add(li, el("span", "badge recalled", "= step " + (byAnswer[i][0] + 1))); }
      else if (c.scored && !post.error) { add(li, el("span", "badge extraneous", "no tutorial step")); }
    });
    if (post.text && !(post.steps || []).length) { add(box, el("pre", null, post.text)); }
    if (pt.pre) {
      var d = add(box, el("details"));
      add(d, el("summary", null, "Pre-test (title only)" + (pt.pre.error ? ": not scored, " + pt.pre.error : "")));
      var pre = add(d, el("ol"));
      (pt.pre.steps || []).forEach(function (s) { add(pre, el("li", null, s)); });
    }
  }

  function kv(parent, pairs) {
    var t = add(parent, el("table", "summary"));
    pairs.forEach(function (p) {
      if (p[1] === "" || p[1] === null || p[1] === undefined) { return; }
      var tr = add(t, el("tr"));
      add(tr, el("th", null, p[0])); add(tr, el("td", null, p[1]));
    });
    return t;
  }

  function render(c) {
    main.textContent = "";
    document.title = (c.title || c.method_title || id) + " · " + c.run;
    add(main, el("h1", null, c.title || c.method_title || id));
    var tokens = c.turns.reduce(function (s, t) { return s + t[4] + t[5]; }, 0);
    kv(main, [["Run", c.run], ["Teacher", c.teacher], ["Learner", c.learner], ["Persona", c.persona],
              ["Domain", c.domain], ["Status", c.status], ["Turns", c.turns.length], ["Tokens", tokens],
              ["Conversation id", id], ["Tutorial id", c.tutorial_id], ["Source", c.where]]);
    if (c.error) { add(main, el("p", "err", "Failed: " + c.error)); }
    c.warnings.forEach(function (w) { add(main, el("p", "warn", "Warning: " + w)); });
    c.missing.forEach(function (m) { add(main, el("p", "warn", "Missing in the record: " + m)); });
    Object.keys(c.extra).forEach(function (k) {
      add(main, el("p", "meta", k + ": " + (typeof c.extra[k] === "string" ? c.extra[k] : JSON.stringify(c.extra[k]))));
    });
    if (c.others.length) {
      var p = add(main, el("p", null, "Same tutorial in other runs: "));
      var seen = {};
      c.others.forEach(function (o, i) {
        if (i) { p.appendChild(document.createTextNode(" · ")); }
        seen[o.run] = (seen[o.run] || 0) + 1;
        var a = add(p, el("a", null, o.run + (seen[o.run] > 1 ? " #" + seen[o.run] : "")));
        a.href = "conversation.html#" + o.chunk + "/" + encodeURIComponent(o.id);
      });
    }
    var grid = add(main, el("div", "grid"));
    var left = add(grid, el("div", "steps"));
    add(left, el("h2", null, "Tutorial"));
    if (c.method_title) { add(left, el("h3", null, c.method_title)); }
    var ol = add(left, el("ol")), items = [];
    c.steps.forEach(function (s) { items.push(add(ol, el("li", null, s))); });
    if (!c.steps.length) { add(left, el("p", "meta", "(tutorial steps not in the record)")); }
    if (c.posttest) { postTest(left, c, items); }
    var right = add(grid, el("div", "turns"));
    add(right, el("h2", null, "Conversation"));
    if (!c.turns.length) { add(right, el("p", "meta", "(no conversation text)")); }
    c.turns.forEach(function (t) {
      var role = t[0], text = t[1], step = t[2], kind = t[3];
      var div = add(right, el("div", "turn " + role + (kind === "clarification" ? " clarification" : "")));
      var head = add(div, el("div", "head"));
      add(head, el("b", null, role.charAt(0).toUpperCase() + role.slice(1)));
      if (step !== null && step !== undefined) { add(head, el("span", "badge step", "step " + (step + 1))); }
      if (kind !== "model") { add(head, el("span", "badge " + kind, kind)); }
      if (t[4] || t[5] || t[6]) {
        add(head, el("span", "meta", " · " + t[4] + " prompt + " + t[5] + " completion tokens · " + t[6] + " s"));
      }
      var more = t[7] || {};
      Object.keys(more).forEach(function (k) {
        var v = more[k];
        add(head, el("span", "badge extra", k.replace(/_/g, " ") + (v === true ? "" : ": " +
          (Array.isArray(v) ? v.join("; ") : typeof v === "object" ? JSON.stringify(v) : v))));
      });
      div.appendChild(document.createTextNode(text));
      if (step !== null && step !== undefined && items[step]) {
        div.addEventListener("mouseenter", function () { items[step].classList.add("active"); });
        div.addEventListener("mouseleave", function () { items[step].classList.remove("active"); });
      }
    });
    var sec = add(main, el("section", "scores"));
    add(sec, el("h2", null, "Scores"));
    if (!c.scored) { add(sec, el("p", "meta", "Not evaluated (no score record).")); }
    else {
      var t = add(sec, el("table", "summary metrics"));
      c.metrics.forEach(function (m) {
        var tr = add(t, el("tr"));
        add(tr, el("th", null, m[0]));
        add(tr, el("td", "num", m[1] === null ? "– (not computable / not parsed)" : m[1].toFixed(4)));
      });
      if (c.judge_failures.length) { add(sec, el("p", "warn", "Judge reply not parsed for: " + c.judge_failures.join(", "))); }
      c.notes.forEach(function (n) { add(sec, el("p", "meta", n)); });
      if (c.checklist && c.checklist.length) { checklist(sec, c, items); }
      Object.keys(c.score_extra).forEach(function (k) {
        add(sec, el("h3", null, k)); add(sec, el("pre", null, JSON.stringify(c.score_extra[k], null, 1)));
      });
      var names = Object.keys(c.judge_raw);
      if (names.length) { add(sec, el("h3", null, "Judge replies")); }
      names.forEach(function (k) {
        c.judge_raw[k].forEach(function (reply, i) {
          var d = add(sec, el("details"));
          add(d, el("summary", null, k + (c.judge_raw[k].length > 1 ? " (try " + (i + 1) + ")" : "")));
          add(d, el("pre", null, reply));
        });
      });
    }
  }

  // The checklist judge's items (--judge-scoring checklist): why a score is low. Items whose P(good) is below
  // one half, and items without an answer, come first and are marked; a step item lights its tutorial step.
  function checklist(sec, c, items) {
    add(sec, el("h3", null, "Checklist items"));
    var failed = c.checklist.filter(function (r) { return r[5] === null || r[5] < 0.5; }).length;
    add(sec, el("p", "meta", c.checklist.length + " yes/no items asked, one at a time; " + failed +
      " failed (P(good) < 0.5, or no answer). " + (c.checklist_reading === "answer"
        ? "Answers read from the reply only (the judge returned no log-probabilities): P = 1 or 0."
        : "P(yes) from the answer token's log-probabilities.") +
      " P(good) = P(yes), or 1 − P(yes) for an item where yes is a fault."));
    var rows = c.checklist.slice().sort(function (a, b) {
      var ga = a[5] === null ? -1 : a[5], gb = b[5] === null ? -1 : b[5];
      return ga - gb;
    });
    var t = add(sec, el("table", "summary checklist"));
    var h = add(t, el("tr"));
    ["item", "informs", "P(good)", "answer"].forEach(function (x) { add(h, el("th", null, x)); });
    rows.forEach(function (r) {
      var bad = r[5] === null || r[5] < 0.5;
      var tr = add(t, el("tr", bad ? "warn" : null));
      add(tr, el("td", null, r[2] || r[0]));
      add(tr, el("td", null, r[1].join(", ")));
      add(tr, el("td", "num", r[5] === null ? "–" : r[5].toFixed(3)));
      add(tr, el("td", null, r[6] ? "no answer: " + r[6] :
        "P(yes) " + r[4].toFixed(3) + (r[3] === "yes-bad" ? " (yes is a fault)" : "")));
      var step = r[7];
      if (step !== null && step !== undefined && items[step]) {
        tr.addEventListener("mouseenter", function () { items[step].classList.add("active"); });
        tr.addEventListener("mouseleave", function () { items[step].classList.remove("active"); });
      }
    });
  }

  var s = document.createElement("script");
  s.src = "data/conv-" + String(chunk).padStart(4, "0") + ".js";
  s.onerror = function () { fail("Cannot load " + s.src + "."); };
  document.head.appendChild(s);
  window.addEventListener("hashchange", function () { location.reload(); });
})();
