// Tables 1/2 on a narrow screen: their CIs are hidden (report.css); a tap on a table shows or hides them.
(function () {
  "use strict";
  Array.prototype.forEach.call(document.querySelectorAll("table.summary.many"), function (t) {
    t.addEventListener("click", function () { t.classList.toggle("show-ci"); });
  });
})();

// The conversation browser of index.html: filter, sort and page the conversations of data/index.js (a column
// per field; the first page's metrics). Every conversation's metrics (data/values.js, the larger file) are read
// once the table is on screen; a sort or filter on a metric before then waits for them.
(function () {
  "use strict";
  var D = window.REPORT_INDEX;
  if (!D) { return; }
  var PAGE = D.page, C = D.columns, N = C.id.length, V = null, waiting = false, missing = false;
  var FIXED = [["Title", "title"], ["Run", "run"], ["Model", "model"], ["Domain", "domain"],
               ["Persona", "persona"], ["Status", "status"], ["Turns", "turns"], ["Tokens", "tokens"]];
  var NAMES = {title: D.titles, run: D.runs, model: D.models, domain: D.domains, status: D.statuses};
  var ALL = new Array(N);
  for (var k = 0; k < N; k++) { ALL[k] = k; }
  var state = {sort: null, desc: false, page: 0, rows: ALL};
  var MISSING = "data/values.js could not be read: the metrics of the first page only";
  var $ = function (id) { return document.getElementById(id); };
  var hasPersona = D.personas.length > 0;

  function fill(select, names) {
    names.forEach(function (n, i) {
      var o = document.createElement("option");
      o.value = String(i); o.textContent = n; select.appendChild(o);
    });
  }
  fill($("f-run"), D.runs); fill($("f-model"), D.models); fill($("f-domain"), D.domains);
  fill($("f-persona"), D.personas); fill($("f-status"), D.statuses);
  fill($("f-metric"), D.metrics.map(function (m, i) { return D.percent[i] ? m + " (%)" : m; }));
  if (!hasPersona) { $("l-persona").style.display = "none"; }

  var columns = FIXED.filter(function (c) { return hasPersona || c[0] !== "Persona"; })
    .map(function (c) { return {name: c[0], key: c[1], metric: -1}; })
    .concat(D.metrics.map(function (m, i) { return {name: D.percent[i] ? m + " %" : m, key: "", metric: i}; }));

  // conversation i's metric m: null where it has none; undefined while data/values.js is read
  function metric(i, m) {
    if (V) { return V[m][i]; }
    return i < D.first.length ? D.first[i][m] : undefined;
  }

  function value(i, col) {
    if (col.metric >= 0) { return metric(i, col.metric); }
    var v = C[col.key][i];
    if (col.key === "persona") { return v < 0 ? "" : D.personas[v]; }
    return NAMES[col.key] ? NAMES[col.key][v] : v;
  }

  var thead = $("conv-table").tHead;
  var tr = document.createElement("tr");
  columns.forEach(function (col, i) {
    var th = document.createElement("th");
    th.textContent = col.name; th.dataset.col = String(i);
    th.addEventListener("click", function () {
      if (state.sort === i) { state.desc = !state.desc; } else { state.sort = i; state.desc = col.metric >= 0; }
      apply();
    });
    tr.appendChild(th);
  });
  thead.appendChild(tr);

  function num(id) { var v = $(id).value; return v === "" ? null : Number(v); }
  function sel(id) { var v = $(id).value; return v === "" ? null : Number(v); }

  function apply() {
    var run = sel("f-run"), model = sel("f-model"), domain = sel("f-domain"), persona = sel("f-persona");
    var status = sel("f-status"), m = sel("f-metric"), lo = num("f-min"), hi = num("f-max");
    var text = $("f-text").value.trim().toLowerCase();
    var byMetric = m !== null && (lo !== null || hi !== null);
    if (!V && (byMetric || (state.sort !== null && columns[state.sort].metric >= 0))) {
      waiting = !missing;
      $("count").textContent = missing ? MISSING : "reading every conversation's metrics…";
      return;
    }
    var rows = ALL.filter(function (i) {
      if (run !== null && C.run[i] !== run) { return false; }
      if (model !== null && C.model[i] !== model) { return false; }
      if (domain !== null && C.domain[i] !== domain) { return false; }
      if (persona !== null && C.persona[i] !== persona) { return false; }
      if (status !== null && C.status[i] !== status) { return false; }
      if (byMetric) {
        var v = V[m][i];
        if (v === null || (lo !== null && v < lo) || (hi !== null && v > hi)) { return false; }
      }
      if (text && (D.titles[C.title[i]] + " " + D.domains[C.domain[i]] + " " + C.id[i]).toLowerCase()
                    .indexOf(text) < 0) { return false; }
      return true;
    });
    if (state.sort !== null) {
      var col = columns[state.sort], sign = state.desc ? -1 : 1;
      rows = rows.slice().sort(function (a, b) {
        var x = value(a, col), y = value(b, col);
        if (x === null || x === undefined) { return (y === null || y === undefined) ? 0 : 1; }  // blanks last
        if (y === null || y === undefined) { return -1; }
        return (x < y ? -1 : x > y ? 1 : 0) * sign;
      });
    }
    Array.prototype.forEach.call(thead.rows[0].cells, function (th, i) {
      th.className = i === state.sort ? (state.desc ? "sorted-desc" : "sorted-asc") : "";
    });
    state.rows = rows; state.page = 0; render();
  }

  function render() {
    var rows = state.rows, pages = Math.max(1, Math.ceil(rows.length / PAGE));
    state.page = Math.min(state.page, pages - 1);
    var start = state.page * PAGE, body = $("conv-table").tBodies[0], frag = document.createDocumentFragment();
    rows.slice(start, start + PAGE).forEach(function (i) {
      var tr = document.createElement("tr");
      columns.forEach(function (col) {
        var td = document.createElement("td"), v = value(i, col);
        if (col.key === "title") {
          var a = document.createElement("a");
          a.href = "conversation.html#" + Math.floor(i / D.chunk_size) + "/" + encodeURIComponent(C.id[i]);
          a.textContent = v || C.id[i]; td.appendChild(a);
        } else {
          td.textContent = v === undefined ? "…" : v === null ? "–" : String(v);
          if (col.metric >= 0 || col.key === "tokens" || col.key === "turns") { td.className = "num"; }
          if (col.key === "status") { td.className = "status-" + v; }
        }
        tr.appendChild(td);
      });
      frag.appendChild(tr);
    });
    body.textContent = ""; body.appendChild(frag);
    $("count").textContent = rows.length + " of " + N + " conversations";
    $("page").textContent = "page " + (state.page + 1) + " of " + pages;
    $("prev").disabled = state.page === 0; $("next").disabled = state.page >= pages - 1;
  }

  ["f-run", "f-model", "f-domain", "f-persona", "f-status", "f-metric"].forEach(function (id) {
    $(id).addEventListener("change", apply);
  });
  ["f-min", "f-max", "f-text"].forEach(function (id) { $(id).addEventListener("input", apply); });
  $("prev").addEventListener("click", function () { state.page -= 1; render(); });
  $("next").addEventListener("click", function () { state.page += 1; render(); });
  apply();

  window.reportValues = function (values) {
    V = values; document.body.dataset.values = "read";
    if (waiting) { waiting = false; apply(); } else { render(); }
  };
  requestAnimationFrame(function () {  // after the table is painted
    setTimeout(function () {
      var script = document.createElement("script");
      script.src = "data/values.js";
      script.onerror = function () { missing = true; waiting = false; $("count").textContent = MISSING; };
      document.body.appendChild(script);
    }, 0);
  });
})();
