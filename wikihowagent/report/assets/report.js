// Tables 1/2 on a narrow screen: their CIs are hidden (report.css); a tap on a table shows or hides them.
(function () {
  "use strict";
  Array.prototype.forEach.call(document.querySelectorAll("table.summary.many"), function (t) {
    t.addEventListener("click", function () { t.classList.toggle("show-ci"); });
  });
})();

// The conversation browser of index.html: filter, sort and page the rows of data/index.js.
(function () {
  "use strict";
  var D = window.REPORT_INDEX;
  if (!D) { return; }
  var PAGE = 100;
  var FIXED = [["Title", 6], ["Run", 1], ["Model", 2], ["Domain", 3], ["Persona", 4], ["Status", 5],
               ["Turns", 9], ["Tokens", 8]];
  var state = {sort: null, desc: false, page: 0, rows: D.rows};
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
    .map(function (c) { return {name: c[0], idx: c[1], metric: -1}; })
    .concat(D.metrics.map(function (m, i) { return {name: D.percent[i] ? m + " %" : m, idx: 10, metric: i}; }));

  function value(row, col) {
    var v = col.metric >= 0 ? row[10][col.metric] : row[col.idx];
    if (col.idx === 1) { return D.runs[v]; }
    if (col.idx === 2) { return D.models[v]; }
    if (col.idx === 3) { return D.domains[v]; }
    if (col.idx === 4) { return v < 0 ? "" : D.personas[v]; }
    if (col.idx === 5) { return D.statuses[v]; }
    return v;
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
    var status = sel("f-status"), metric = sel("f-metric"), lo = num("f-min"), hi = num("f-max");
    var text = $("f-text").value.trim().toLowerCase();
    var rows = D.rows.filter(function (r) {
      if (run !== null && r[1] !== run) { return false; }
      if (model !== null && r[2] !== model) { return false; }
      if (domain !== null && r[3] !== domain) { return false; }
      if (persona !== null && r[4] !== persona) { return false; }
      if (status !== null && r[5] !== status) { return false; }
      if (metric !== null && (lo !== null || hi !== null)) {
        var v = r[10][metric];
        if (v === null || (lo !== null && v < lo) || (hi !== null && v > hi)) { return false; }
      }
      if (text && (r[6] + " " + D.domains[r[3]] + " " + r[0]).toLowerCase().indexOf(text) < 0) { return false; }
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
    rows.slice(start, start + PAGE).forEach(function (r) {
      var tr = document.createElement("tr");
      columns.forEach(function (col) {
        var td = document.createElement("td"), v = value(r, col);
        if (col.idx === 6) {
          var a = document.createElement("a");
          a.href = "conversation.html#" + r[7] + "/" + encodeURIComponent(r[0]);
          a.textContent = v || r[0]; td.appendChild(a);
        } else {
          td.textContent = (v === null || v === undefined) ? "–" : String(v);
          if (col.metric >= 0 || col.idx === 8 || col.idx === 9) { td.className = "num"; }
          if (col.idx === 5) { td.className = "status-" + v; }
        }
        tr.appendChild(td);
      });
      frag.appendChild(tr);
    });
    body.textContent = ""; body.appendChild(frag);
    $("count").textContent = rows.length + " of " + D.rows.length + " conversations";
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
})();
