/* The evaluation report: charts, the per-query table (sort, filter) and the drill-down, from
 * window.REPORT_DATA (assets/data.js, written by adapter.evaluation.html). No framework; every
 * text goes in through textContent. */
(function () {
  "use strict";

  const D = window.REPORT_DATA;
  const COLORS = { bm25: "#1f77b4", dense: "#e8710a", hybrid: "#2ca02c" };
  const names = D.techniques.map((t) => t.name);
  const byName = Object.fromEntries(D.techniques.map((t) => [t.name, t]));
  const qpos = Object.fromEntries(D.queries.map((q, i) => [q.id, i]));
  const charts = {};

  const { el } = window.Dom;  // dom.js, loaded first

  const fmt = (v, d = 4) => (v === null || v === undefined ? "-" : Number(v).toFixed(d));
  const fmtScore = (v) => (v === null || v === undefined ? "-" : Math.abs(v) >= 100 ? Number(v).toFixed(1) : Math.abs(v) >= 1 ? Number(v).toFixed(3) : Number(v).toFixed(4));
  const ms = (v) => (v === null || v === undefined ? "-" : v < 10 ? v.toFixed(1) : v.toFixed(0));
  const heat = (v) => `hsl(${Math.round(120 * Math.max(0, Math.min(1, v)))}, 55%, ${92 - 8 * Math.max(0, Math.min(1, v))}%)`;

  // --- summary: which measure the significance columns show ------------------------------------
  const sigMeasure = document.getElementById("sig-measure");
  sigMeasure.addEventListener("change", () => {
    document.querySelectorAll("#summary-table .sig").forEach((n) => { n.hidden = n.dataset.measure !== sigMeasure.value; });
  });

  // --- charts ------------------------------------------------------------------------------------
  // The server's took is whole milliseconds: 0 means under 1 ms, drawn at 0.5 on the log axis and said so.
  const FLOOR_MS = 0.5;
  function chartPoints(measure, key) {
    return D.techniques.filter((t) => t[key] !== null && t[measure] !== null).map((t) => ({
      x: Math.max(t[key], FLOOR_MS), y: t[measure], label: (t.default ? "★ " : "") + t.name + (t[key] < FLOOR_MS ? " (<1 ms)" : ""), strong: t.default, t,
    }));
  }

  function drawChart(id, key, measure) {
    const points = chartPoints(measure, key);
    const ys = points.map((p) => p.y);
    const xs = points.map((p) => p.x);
    const span = Math.max(...ys) - Math.min(...ys) || 0.02;
    const datasets = ["bm25", "dense", "hybrid"].flatMap((family) => [false, true].map((post) => {
      const data = points.filter((p) => p.t.family === family && p.t.post === post);
      return {
        label: family + (post ? " + rerank/MMR" : ""), data,
        pointStyle: data.map((p) => (p.t.default ? "star" : "circle")),
        pointRadius: data.map((p) => (p.t.default ? 10 : 6)),
        pointHoverRadius: data.map((p) => (p.t.default ? 12 : 8)),
        borderWidth: data.map((p) => (p.t.default ? 2.5 : 1.5)),
        borderColor: COLORS[family],
        backgroundColor: post ? "rgba(255,255,255,0.9)" : COLORS[family],
      };
    })).filter((ds) => ds.data.length);
    if (charts[id]) charts[id].destroy();
    charts[id] = new Chart(document.getElementById(id), {
      type: "scatter",
      data: { datasets },
      options: {
        animation: false, responsive: true, maintainAspectRatio: false,
        layout: { padding: { right: 8, top: 8 } },
        scales: {
          x: { type: "logarithmic", min: Math.min(...xs) / 1.6, max: Math.max(...xs) * 2.2,
               title: { display: true, text: (key === "server_p50" ? "server latency, took" : "client latency") + " p50 (ms, log scale)" },
               ticks: { callback: (v) => { const m = v / 10 ** Math.floor(Math.log10(v)); return [1, 2, 5].some((k) => Math.abs(m - k) < 1e-9) ? String(v) : ""; } } },
          y: { suggestedMin: Math.min(...ys) - span * 0.2, suggestedMax: Math.max(...ys) + span * 0.2, title: { display: true, text: measure } },
        },
        plugins: {
          legend: { position: "bottom", labels: { usePointStyle: true } },
          tooltip: { callbacks: { label: (c) => `${c.raw.t.name}: ${measure} ${fmt(c.raw.y)}, ${ms(c.raw.x)} ms` } },
          pointLabels: {},
        },
      },
      plugins: [window.PointLabels.plugin],
    });
  }

  const chartMeasure = document.getElementById("chart-measure");
  function drawCharts() {
    drawChart("chart-server", "server_p50", chartMeasure.value);
    drawChart("chart-client", "client_p50", chartMeasure.value);
  }
  chartMeasure.addEventListener("change", drawCharts);

  // --- per-query table -----------------------------------------------------------------------------
  const pq = { measure: D.measures[0], sort: { key: "id", dir: 1 }, rows: [] };
  const legs = D.legs;
  const hasLegs = legs.length === 2 && D.default;

  function value(name, i, measure = pq.measure) {
    const s = D.scores[measure] && D.scores[measure][name];
    return s ? s[i] : null;
  }

  function deltaBestLeg(i) {
    if (!hasLegs) return null;
    return value(D.default, i) - Math.max(value(legs[0], i), value(legs[1], i));
  }

  const columns = [
    { key: "id", label: "id", text: true },
    { key: "text", label: "query", text: true, wide: true },
    { key: "class", label: "class", text: true },
    { key: "relevant", label: "rel.", title: "relevant documents judged" },
    // The default's column and its Δ best leg first, the other rows after them in the eval's order: with the
    // 14 rows of an eval on OpenSearch 3.x the table is wider than a laptop's window, and the default (the
    // eval's last row) was the column cut off.
    ...names.filter((n) => n === D.default).map((n) => ({ key: "t:" + n, label: n, technique: n, title: `${n}: the product's default` })),
    ...(hasLegs ? [{ key: "delta", label: "Δ best leg", title: `${D.default} minus the better of ${legs.join(" and ")}` }] : []),
    ...names.filter((n) => n !== D.default).map((n) => ({ key: "t:" + n, label: n, technique: n })),
  ];

  function cellValue(col, i) {
    const q = D.queries[i];
    if (col.key === "id") return q.id;
    if (col.key === "text") return q.text;
    if (col.key === "class") return q.class;
    if (col.key === "relevant") return q.relevant;
    if (col.key === "delta") return deltaBestLeg(i);
    return value(col.technique, i);
  }

  function buildTable() {
    const table = document.getElementById("pq-table");
    const head = el("tr");
    columns.forEach((col) => {
      const button = el("button", { type: "button", class: "sort", title: col.title || (col.technique ? `${col.technique}: ${pq.measure} of the query` : null), onclick: () => sortBy(col.key) },
        col.label);
      head.append(el("th", { "data-key": col.key, class: (col.technique ? "tech" : "") + (col.technique === D.default ? " is-default" : ""), scope: "col" }, button));
    });
    table.tHead.replaceChildren(head);
    const body = table.tBodies[0];
    body.replaceChildren();
    pq.rows = D.queries.map((q, i) => {
      const tr = el("tr", { tabindex: "0", "data-qid": q.id, onclick: () => openDrill(q.id), onkeydown: (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); openDrill(q.id); } } });
      body.append(tr);
      return { i, tr };
    });
    fillTable();
  }

  function fillTable() {
    pq.rows.forEach(({ i, tr }) => {
      tr.replaceChildren(...columns.map((col) => {
        const v = cellValue(col, i);
        if (col.text) return el("td", { class: col.wide ? "query" : "", title: col.wide ? v : null }, v);
        if (col.key === "relevant") return el("td", { class: "num" }, v);
        if (col.key === "delta") return el("td", { class: "num " + (v > 1e-9 ? "up" : v < -1e-9 ? "down" : "same") }, v === null ? "-" : (v > 0 ? "+" : "") + v.toFixed(3));
        const td = el("td", { class: "num" + (col.technique === D.default ? " is-default" : "") }, fmt(v, 3));
        if (v !== null) td.style.background = heat(v);
        return td;
      }));
    });
    applyFilters();
    sortBy(pq.sort.key, true);
  }

  function sortBy(key, keep) {
    if (!keep) pq.sort = { key, dir: pq.sort.key === key ? -pq.sort.dir : (key === "id" || key === "text" || key === "class" ? 1 : -1) };
    const col = columns.find((c) => c.key === pq.sort.key);
    const dir = pq.sort.dir;
    const rows = pq.rows.slice().sort((a, b) => {
      const x = cellValue(col, a.i), y = cellValue(col, b.i);
      if (col.text) return dir * String(x).localeCompare(String(y), undefined, { numeric: true });
      return dir * ((x ?? -Infinity) - (y ?? -Infinity)) || a.i - b.i;
    });
    const body = document.getElementById("pq-table").tBodies[0];
    rows.forEach((r) => body.append(r.tr));
    document.querySelectorAll("#pq-table th").forEach((th) => {
      th.setAttribute("aria-sort", th.dataset.key === pq.sort.key ? (dir > 0 ? "ascending" : "descending") : "none");
    });
  }

  const f = { text: document.getElementById("pq-text"), cls: document.getElementById("pq-class"), a: document.getElementById("pq-a"),
    op: document.getElementById("pq-op"), b: document.getElementById("pq-b") };

  function applyFilters() {
    const text = f.text.value.trim().toLowerCase();
    const cls = f.cls.value, a = f.a.value, op = f.op.value, b = f.b.value;
    let shown = 0;
    pq.rows.forEach(({ i, tr }) => {
      const q = D.queries[i];
      let ok = (!text || q.text.toLowerCase().includes(text) || q.id.toLowerCase() === text) && (!cls || q.class === cls);
      if (ok && op && a && b && a !== b) {
        const d = value(a, i) - value(b, i);
        ok = op === "lt" ? d < -1e-9 : op === "gt" ? d > 1e-9 : op === "eq" ? Math.abs(d) <= 1e-9 : Math.abs(d) > 1e-9;
      }
      tr.hidden = !ok;
      if (ok) shown += 1;
    });
    const rule = op && a && b && a !== b ? ` where ${a} ${f.op.selectedOptions[0].textContent} ${b} on ${pq.measure}` : "";
    document.getElementById("pq-count").textContent = `${shown} of ${D.queries.length} queries${rule}`;
  }

  function preset(a, op, b) {
    f.a.value = a; f.op.value = op; f.b.value = b;
    applyFilters();
  }

  function buildFilters() {
    for (const sel of [f.a, f.b]) sel.replaceChildren(...names.map((n) => el("option", { value: n }, n)));
    f.a.value = D.default || names[0];
    f.b.value = legs[0] || names[1] || names[0];
    const presets = document.getElementById("pq-presets");
    if (hasLegs) {
      presets.append(
        el("button", { type: "button", onclick: () => preset(D.default, "lt", legs[0]) }, `default lost to ${legs[0]}`),
        el("button", { type: "button", onclick: () => preset(D.default, "lt", legs[1]) }, `default lost to ${legs[1]}`),
        el("button", { type: "button", onclick: () => preset(D.default, "gt", legs[0]) }, `default beat ${legs[0]}`),
        el("button", { type: "button", onclick: () => { f.op.value = ""; f.text.value = ""; f.cls.value = ""; applyFilters(); } }, "all queries"),
      );
    }
    [f.text, f.cls, f.a, f.op, f.b].forEach((n) => n.addEventListener("input", applyFilters));
    const measure = document.getElementById("pq-measure");
    measure.addEventListener("change", () => { pq.measure = measure.value; fillTable(); if (drill.qid) openDrill(drill.qid, drill.technique, true); });
  }

  // --- drill-down ------------------------------------------------------------------------------------
  const drill = { qid: null, technique: null };

  function grade(qid, doc) {
    const g = (D.qrels[qid] || {})[doc];
    return el("span", { class: "grade g" + (g === undefined ? "u" : g), title: g === undefined ? "not judged" : `judged ${g}` }, g === undefined ? "·" : String(g));
  }

  function title(doc) {
    const t = D.titles[doc] || "";
    return el("span", { class: "title", title: t }, t || "(no title kept)");
  }

  function legCell(info) {
    if (!info) return el("td", { class: "num muted", title: "not in this leg's results" }, "—");
    return el("td", { class: "num" }, el("b", {}, "#" + info[0]), " ", el("span", { class: "muted" }, fmtScore(info[1])));
  }

  function moved(legRanks, rank) {
    const present = legRanks.filter((r) => r !== null);
    if (!present.length) return el("span", { class: "moved new", title: "in neither leg's results" }, "new");
    const best = Math.min(...present);
    if (best > 10) return el("span", { class: "moved new", title: `in neither leg's top 10 (best leg rank ${best})` }, `↑ from #${best}`);
    if (best > rank) return el("span", { class: "moved up", title: `better than either leg (best leg rank ${best})` }, `▲ ${best - rank}`);
    if (best < rank) return el("span", { class: "moved down", title: `worse than its best leg (rank ${best})` }, `▼ ${rank - best}`);
    return el("span", { class: "moved same", title: "as in its best leg" }, "=");
  }

  function legList(qid, leg, fusedRanks) {
    const list = D.drill[qid].lists[leg] || [];
    const rows = list.map(([doc, score], k) => {
      const fr = fusedRanks[doc];
      return el("tr", { class: fr ? "" : "dropped", "data-doc": doc },
        el("td", { class: "num" }, k + 1), el("td", {}, grade(qid, doc)), el("td", { class: "doc" }, doc), el("td", {}, title(doc)),
        el("td", { class: "num" }, fmtScore(score)),
        el("td", { class: "num" + (fr ? "" : " muted"), title: fr ? "its rank in the fused list" : "not in the fused top 10" }, fr ? "→ #" + fr : "out"));
    });
    return el("table", { class: "list" },
      el("thead", {}, el("tr", {}, ...["#", "rel", "id", "title", "score", "fused"].map((h) => el("th", {}, h)))),
      el("tbody", {}, ...rows));
  }

  function fusedList(qid, technique) {
    const dd = D.drill[qid];
    const list = dd.lists[technique] || [];
    const norm = (dd.norm || {})[technique] || {};
    const rows = list.map(([doc, score], k) => {
      const info = legs.map((leg) => (dd.legs[leg] || {})[doc] || null);
      const n = norm[doc] || [];
      const legCells = legs.flatMap((leg, j) => [legCell(info[j]), el("td", { class: "num", title: "normalised by the fusion this query ran" }, fmtScore(n[j]))]);
      return el("tr", { "data-doc": doc },
        el("td", { class: "num" }, k + 1), el("td", {}, grade(qid, doc)), el("td", { class: "doc" }, doc), el("td", {}, title(doc)),
        ...legCells, el("td", { class: "num" }, el("b", {}, fmtScore(score))),
        el("td", {}, moved(info.map((x) => (x ? x[0] : null)), k + 1)));
    });
    const head1 = el("tr", {}, el("th", { colspan: "4" }, ""), ...legs.map((leg) => el("th", { colspan: "2" }, leg)), el("th", {}, ""), el("th", {}, ""));
    const head2 = el("tr", {}, ...["#", "rel", "id", "title"].map((h) => el("th", {}, h)),
      ...legs.flatMap(() => [el("th", {}, "rank · raw"), el("th", {}, "norm.")]), el("th", {}, "fused"), el("th", {}, "moved"));
    return el("table", { class: "list fused" }, el("thead", {}, head1, head2), el("tbody", {}, ...rows));
  }

  function openDrill(qid, technique, keepScroll) {
    const i = qpos[qid];
    if (i === undefined) return;
    const dd = D.drill[qid];
    const fusedNames = names.filter((n) => dd.norm && dd.norm[n]);
    technique = technique && dd.lists[technique] ? technique : (D.default && dd.lists[D.default] ? D.default : fusedNames[0] || names[0]);
    drill.qid = qid; drill.technique = technique;
    const q = D.queries[i];
    const section = document.getElementById("drill");
    section.hidden = false;
    document.getElementById("drill-title").textContent = `· query ${q.id}`;
    pq.rows.forEach(({ tr }) => tr.classList.toggle("selected", tr.dataset.qid === qid));

    const chips = el("div", { class: "chips" }, ...names.map((n) => {
      const v = value(n, i);
      return el("span", { class: "chip" + (n === technique ? " on" : "") + (n === D.default ? " is-default" : ""), style: `background:${heat(v ?? 0)}` }, `${n} ${fmt(v, 3)}`);
    }));
    const select = el("select", { id: "drill-technique", "aria-label": "the fused list to explain" },
      ...names.filter((n) => !legs.includes(n)).map((n) => el("option", { value: n, selected: n === technique }, n)));
    select.addEventListener("change", () => openDrill(qid, select.value, true));
    const weights = dd.weights && dd.weights[technique];
    const fusedRanks = Object.fromEntries((dd.lists[technique] || []).map(([doc], k) => [doc, k + 1]));
    const relevant = Object.entries(D.qrels[qid] || {}).filter(([, g]) => g > 0).map(([d]) => d);
    const missed = relevant.filter((d) => !fusedRanks[d]);
    const body = [
      el("p", { class: "query" }, el("q", {}, q.text), " ", el("span", { class: "badge light" }, q.class), " ",
        el("span", { class: "muted" }, `${q.relevant} relevant judged`)),
      el("div", { class: "chips-head" }, `${pq.measure} of this query:`), chips,
      el("p", {}, el("label", {}, "explain the fused list of ", select),
        weights ? el("span", { class: "muted" }, ` · weights ${legs.map((l, j) => `${l} ${weights[j]}`).join(" / ")} (as this query ran)`) : null),
    ];
    if (hasLegs || legs.length) {
      body.push(el("div", { class: "lists" },
        ...legs.map((leg) => el("div", { class: "col" }, el("h3", {}, `${leg}: top 10`), legList(qid, leg, fusedRanks))),
        el("div", { class: "col wide" }, el("h3", {}, `${technique}: top 10`), fusedList(qid, technique))));
    } else {
      body.push(el("p", { class: "muted" }, "bm25 and dense were not in this eval: the legs' columns need them."),
        el("div", { class: "lists" }, el("div", { class: "col wide" }, el("h3", {}, technique), fusedList(qid, technique))));
    }
    if (missed.length) {
      body.push(el("p", { class: "missed" }, `Relevant but not in ${technique}'s top 10: `,
        ...missed.flatMap((d, k) => [k ? ", " : "", el("code", {}, d), " ",
          el("span", { class: "muted" }, legs.map((leg) => `${leg} ${(dd.legs[leg] || {})[d] ? "#" + dd.legs[leg][d][0] : "beyond the top 10 lists"}`).join(", "))])));
    }
    document.getElementById("drill-body").replaceChildren(...body);
    // The same document lit up in every list while the pointer is on it: where it came from, where it went.
    document.querySelectorAll("#drill-body tr[data-doc]").forEach((tr) => {
      const same = () => document.querySelectorAll(`#drill-body tr[data-doc="${CSS.escape(tr.dataset.doc)}"]`);
      tr.addEventListener("mouseenter", () => same().forEach((n) => n.classList.add("hover")));
      tr.addEventListener("mouseleave", () => same().forEach((n) => n.classList.remove("hover")));
    });
    if (!keepScroll) {
      section.scrollIntoView({ block: "start" });
      select.focus({ preventScroll: true });
    }
    history.replaceState(null, "", `#q=${encodeURIComponent(qid)}&t=${encodeURIComponent(technique)}`);
  }

  // --- start ------------------------------------------------------------------------------------------
  buildFilters();
  buildTable();
  drawCharts();
  const hash = new URLSearchParams(location.hash.slice(1));
  if (hash.get("q")) openDrill(hash.get("q"), hash.get("t"));
  document.addEventListener("keydown", (e) => {
    if (e.key === "/" && document.activeElement.tagName !== "INPUT") { e.preventDefault(); f.text.focus(); }
  });
  window.REPORT = { ready: true, charts, openDrill, sortBy };
})();
