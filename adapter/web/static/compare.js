/* The compare page of `hybrid serve`: one query, two to four configurations side by side.
 * POST /api/compare runs every column with one query vector; each hit shows its title, snippet,
 * each leg's rank and score, the fused score, and its move against the first column. No framework;
 * every text goes in through textContent (snippets: only the server's <em> marks become elements).
 * With UBI on (hybrid serve --ubi) each search sends this browser's random client id, and opening a
 * hit posts one UBI click event (POST /events) with its column's query_id and its 0-based position. */
(function () {
  "use strict";

  const INFO = JSON.parse(document.getElementById("server-info").textContent);
  const TECHNIQUES = INFO.techniques;
  const CLIENT_FUSED = new Set(INFO.client_fusions || []);  // offered, but this cluster's server cannot run them
  const DEFAULT_COLUMNS = [
    { technique: "bm25" },
    { technique: "dense" },
    { technique: "hybrid" },
    { technique: "hybrid", fusion: "rrf" },
  ];
  const state = { columns: [], results: null, lastMs: null, events: 0 };

  /* A random id for this browser (kept in localStorage), never a name: what UBI records as client_id. */
  function clientId() {
    const key = "hybrid-ubi-client-id";
    let id = null;
    try { id = localStorage.getItem(key); } catch (e) { /* storage refused: a new id per page */ }
    if (!id) {
      const bytes = crypto.getRandomValues(new Uint8Array(16));
      id = "browser-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
      try { localStorage.setItem(key, id); } catch (e) { /* as above */ }
    }
    return id;
  }
  const CLIENT_ID = INFO.ubi ? clientId() : null;

  /* One UBI click event (ubi-event.schema.json) for the hit at 0-based ``position`` of a search. */
  function sendClick(queryId, doc, position) {
    const event = {
      action_name: "click", query_id: queryId, client_id: CLIENT_ID, timestamp: new Date().toISOString(),
      message_type: "CLICK_THROUGH", application: "hybrid-search",  // as the query records say (adapter.traffic.ubi.APPLICATION)
      event_attributes: { object: { object_id: doc, object_id_field: "_id" }, position: { ordinal: position } },
    };
    state.events += 1;
    fetch("/events", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(event), keepalive: true })
      .catch(() => { /* a lost click is only a lost signal: the page goes on */ });
  }

  const { el, excerpt } = window.Dom;  // dom.js, loaded first

  const num = (v, d = 4) => (v === null || v === undefined ? "-" : Math.abs(v) >= 100 ? v.toFixed(1) : Math.abs(v) >= 1 ? v.toFixed(3) : v.toFixed(d));

  /* ``node`` with ``fragment``'s text appended, the server's <em> marks as <mark> elements, nothing else interpreted. */
  function marked(node, fragment) {
    fragment.split(/(<em>.*?<\/em>)/).forEach((part) => {
      const m = part.match(/^<em>(.*)<\/em>$/);
      if (m) node.append(el("mark", {}, m[1]));
      else if (part) node.append(document.createTextNode(part));
    });
    return node;
  }

  /* The hit's text: a snippet of a text field that matched, else the text's start. A title that matched marks
   * the title line (title()): it never stands in for the text, which would show the title twice and no text. */
  function snippet(highlight, text) {
    const names = Object.keys(highlight || {}).filter((name) => name !== "title" && (highlight[name] || []).length);
    return marked(el("p", { class: "snippet" }), names.length ? highlight[names[0]][0] : excerpt(text, 220));
  }

  /* The hit's title, its matched words marked where the server highlighted the whole of it. */
  function title(hit) {
    const span = el("span", { class: "title" });
    const fragment = ((hit.highlight || {}).title || [])[0];
    const whole = fragment !== undefined && fragment.replace(/<\/?em>/g, "").trim() === (hit.title || "").trim();
    if (whole) return marked(span, fragment);
    span.append(hit.title || hit.id);  // as written: a title is never parsed for marks
    return span;
  }

  // --- column editors ------------------------------------------------------------------------------
  function columnEditor(i) {
    const c = state.columns[i];
    const technique = el("select", { "aria-label": `column ${i + 1} technique` }, ...TECHNIQUES.map((t) => el("option", { value: t, selected: t === c.technique }, t)));
    const fusion = el("select", { "aria-label": `column ${i + 1} fusion` },
      el("option", { value: "" }, `index default (${INFO.default_fusion})`),
      ...INFO.fusions.map((f) => el("option", { value: f, selected: f === c.fusion }, CLIENT_FUSED.has(f) ? `${f} (client)` : f)));
    fusion.title = "the fusion; adaptive: the index's calibrated weights (hybrid calibrate)";
    const weight = el("input", { type: "number", min: "0", max: "1", step: "0.05", value: c.weights ? c.weights[0] : "", placeholder: "w bm25",
      "aria-label": `column ${i + 1} bm25 weight (dense gets the rest)`, title: "bm25 weight, 0 to 1; dense gets 1 minus it (empty: the fusion's default)" });
    const rankConstant = el("input", { type: "number", min: "1", max: "10000", step: "1", value: c.rank_constant || "", placeholder: "RRF k",
      "aria-label": `column ${i + 1} RRF rank constant`, title: "RRF rank constant (empty: 60)" });
    const mmr = el("input", { type: "number", min: "0", max: "1", step: "0.1", value: c.mmr ?? "", placeholder: "MMR λ",
      "aria-label": `column ${i + 1} MMR lambda`, title: "diversify with MMR: lambda 0 to 1 (empty: off)" });
    const rerank = el("input", { type: "checkbox", checked: !!c.rerank, disabled: !INFO.reranker, "aria-label": `column ${i + 1} rerank`,
      title: INFO.reranker ? `rerank the top 50 with ${INFO.reranker}` : "start hybrid serve with --reranker MODEL to rerank" });
    const update = () => {
      c.technique = technique.value;
      c.fusion = fusion.value || undefined;
      const w = weight.value === "" ? null : Math.max(0, Math.min(1, Number(weight.value)));
      c.weights = w === null ? undefined : [w, Math.round((1 - w) * 1000) / 1000];
      c.rank_constant = rankConstant.value === "" ? undefined : Number(rankConstant.value);
      c.mmr = mmr.value === "" ? undefined : Number(mmr.value);
      c.rerank = rerank.checked ? 50 : undefined;
      const fused = c.technique !== "bm25" && c.technique !== "dense";
      [fusion, weight, rankConstant].forEach((n) => { n.disabled = !fused; });
    };
    [technique, fusion, weight, rankConstant, mmr, rerank].forEach((n) => n.addEventListener("change", update));
    update();
    const remove = el("button", { type: "button", class: "remove", title: "remove this column", "aria-label": `remove column ${i + 1}`,
      disabled: state.columns.length <= 1, onclick: () => { state.columns.splice(i, 1); render(); } }, "×");
    return el("div", { class: "editor" }, technique, fusion, weight, rankConstant, mmr,
      el("label", { class: "check" }, rerank, "rerank"), remove);
  }

  // --- results ---------------------------------------------------------------------------------------
  function explainTable(hit) {
    if (!hit.legs || !hit.legs.length) return el("p", { class: "muted" }, "a single leg: its score is the leg's own");
    return el("table", { class: "explain" },
      // Short heads (the full name on hover): the table fits a quarter of a laptop's window.
      el("thead", {}, el("tr", {}, ...[["leg"], ["rank"], ["raw", "the leg's own score"], ["norm.", "normalised, as the fusion normalised it"],
        ["weight"], ["contrib.", "contribution to the fused score"]].map(([h, title]) => el("th", { title }, h)))),
      el("tbody", {}, ...hit.legs.map((l) => el("tr", {},
        el("td", {}, l.leg), el("td", { class: "num" }, l.rank ?? "—"), el("td", { class: "num" }, num(l.raw_score)),
        el("td", { class: "num" }, num(l.normalized_score)), el("td", { class: "num" }, num(l.weight, 2)), el("td", { class: "num" }, num(l.contribution))))));
  }

  function legLine(result, hit) {
    if (hit.legs && hit.legs.length) {
      return el("span", { class: "legs" }, ...hit.legs.flatMap((l, j) => [j ? " · " : "", el("span", { class: "leg " + l.leg },
        `${l.leg} ${l.rank ? "#" + l.rank : "—"} ${l.raw_score === null || l.raw_score === undefined ? "" : num(l.raw_score, 3)}`)]));
    }
    return el("span", { class: "legs" }, el("span", { class: "leg " + result.technique }, `${result.technique} #${hit.rank} ${num(hit.score, 3)}`));
  }

  function mark(first, doc, rank, i) {
    if (i === 0 || !first) return null;
    const before = first.indexOf(doc);
    if (before < 0) return el("span", { class: "moved new", title: "not in the first column's list" }, "new");
    const d = before + 1 - rank;
    if (d > 0) return el("span", { class: "moved up", title: `rank ${before + 1} in the first column` }, `▲ ${d}`);
    if (d < 0) return el("span", { class: "moved down", title: `rank ${before + 1} in the first column` }, `▼ ${-d}`);
    return el("span", { class: "moved same", title: "same rank as in the first column" }, "=");
  }

  // What one request of a search was for, read from what it sent (the first is the search itself).
  function purpose(sent, i) {
    if (i === 0) return "the search";
    const body = JSON.stringify(sent.body ?? null);
    if (body.includes('"highlight"')) return "excerpts";
    if (sent.path.endsWith("/_msearch") || body.includes('"_source":false')) return "the legs' scores (explain)";
    return "a follow-up";
  }

  function resultColumn(column, i, first) {
    if (column.error) return el("div", { class: "result error", role: "alert" }, column.error);
    const r = column.result;
    const list = el("ol", { class: "hits" }, ...r.hits.map((hit, position) => el("li", { "data-doc": hit.id, "data-position": position },
      el("details", {},
        el("summary", {},
          el("span", { class: "rank" }, hit.rank), " ",
          title(hit), " ", mark(first, hit.id, hit.rank, i),
          el("div", { class: "line" }, el("code", {}, hit.id), " ", el("span", { class: "score", title: "the final score" }, num(hit.score)), " ", legLine(r, hit)),
          snippet(hit.highlight, hit.text)),
        el("div", { class: "why" }, explainTable(hit),
          hit.rerank_score !== null && hit.rerank_score !== undefined ? el("p", {}, `rerank score ${num(hit.rerank_score)}, first stage ${num(hit.first_stage_score)}`) : null,
          hit.mmr_score !== null && hit.mmr_score !== undefined ? el("p", {}, `MMR score ${num(hit.mmr_score)}, first stage ${num(hit.first_stage_score)}`) : null)))));
    const weights = r.fusion && r.fusion.weights ? ` ${r.fusion.weights.join("/")}` : "";
    const fused = r.fused_by === "none" ? "one leg, no fusion" : `fused by ${r.fused_by}${r.pipeline ? " (" + r.pipeline + ")" : ""}${r.fusion ? " · " + r.fusion.name + weights : ""}`;
    // Why more than one request: the page asks for each leg's ranks and scores (explain) and for highlights.
    const why = "the requests this column's search sent: the search itself; one per leg for the leg ranks and scores " +
      "this page shows (explain); one for the highlighted excerpts where the server cannot return them with the hits. " +
      "A plain hybrid search without explain is one request. `hybrid search --show-query` prints each.";
    const count = `${r.requests} request${r.requests === 1 ? "" : "s"}`;
    const reasons = r.requests > 1 && r.sent ? `: ${r.sent.map(purpose).join(" + ")}` : "";
    const foot = el("p", { class: "foot muted" }, fused,
      ` · took ${Math.round(r.took_ms ?? 0)} ms server, ${Math.round(r.total_ms ?? 0)} ms client · `,
      el("abbr", { class: "requests", title: why }, count + reasons));
    const notices = r.notices.length ? el("ul", { class: "notices" }, ...r.notices.map((n) => el("li", {}, n))) : null;
    if (!r.hits.length) list.append(el("li", { class: "muted" }, "no hits"));
    return el("div", { class: "result" }, notices, list, foot);
  }

  function render() {
    const root = document.getElementById("columns");
    root.style.gridTemplateColumns = `repeat(${state.columns.length}, minmax(260px, 1fr))`;
    const first = state.results && state.results[0] && state.results[0].result ? state.results[0].result.hits.map((h) => h.id) : null;
    root.replaceChildren(...state.columns.map((c, i) => el("section", { class: "column", "aria-label": `column ${i + 1}` },
      el("h2", {}, `${i + 1}`, el("span", { class: "label" }, state.results && state.results[i] ? state.results[i].label : "")),
      columnEditor(i),
      state.results && state.results[i] ? resultColumn(state.results[i], i, first) : el("p", { class: "muted" }, "…"))));
    document.getElementById("add").disabled = state.columns.length >= INFO.limits.columns;
    wireHits();
  }

  function wireHits() {
    document.querySelectorAll("#columns li[data-doc]").forEach((li) => {
      const same = () => document.querySelectorAll(`#columns li[data-doc="${CSS.escape(li.dataset.doc)}"]`);
      li.addEventListener("mouseenter", () => same().forEach((n) => n.classList.add("hover")));
      li.addEventListener("mouseleave", () => same().forEach((n) => n.classList.remove("hover")));
    });
    document.querySelectorAll("#columns .column").forEach((col, i) => {
      const summaries = Array.from(col.querySelectorAll("summary"));
      const result = state.results && state.results[i] && state.results[i].result;
      if (CLIENT_ID && result && result.query_id) {
        // A click (or Enter) that opens a hit is a click on it; closing it again is not another.
        summaries.forEach((s) => s.addEventListener("click", () => {
          const li = s.closest("li[data-doc]");
          if (!s.parentElement.open) sendClick(result.query_id, li.dataset.doc, Number(li.dataset.position));
        }));
      }
      summaries.forEach((s, j) => s.addEventListener("keydown", (e) => {
        if (e.key === "ArrowDown" && summaries[j + 1]) { e.preventDefault(); summaries[j + 1].focus(); }
        if (e.key === "ArrowUp" && summaries[j - 1]) { e.preventDefault(); summaries[j - 1].focus(); }
      }));
    });
  }

  async function run(event) {
    if (event) event.preventDefault();
    const q = document.getElementById("q").value.trim();
    const status = document.getElementById("status");
    if (!q) { status.textContent = "type a query first"; return; }
    const k = Number(document.getElementById("k").value);
    const columns = state.columns.map((c) => Object.fromEntries(Object.entries({ ...c, k }).filter(([, v]) => v !== undefined)));
    const started = performance.now();
    status.textContent = "searching…";
    document.body.dataset.state = "searching";
    try {
      const asked = CLIENT_ID ? { q, columns, client_id: CLIENT_ID } : { q, columns };
      const response = await fetch("/api/compare", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(asked) });
      const data = await response.json();
      if (!response.ok) throw new Error(data.error || response.statusText);
      state.results = data.columns;
      render();
      state.lastMs = performance.now() - started;
      status.textContent = `${state.columns.length} columns in ${Math.round(state.lastMs)} ms`;
      history.replaceState(null, "", "#" + new URLSearchParams({ q, c: JSON.stringify(state.columns) }).toString());
      document.body.dataset.state = "done";
    } catch (err) {
      state.results = null;
      render();
      status.textContent = `error: ${err.message}`;
      document.body.dataset.state = "error";
    }
  }

  // --- start ----------------------------------------------------------------------------------------
  const hash = new URLSearchParams(location.hash.slice(1));
  try { state.columns = hash.get("c") ? JSON.parse(hash.get("c")).slice(0, INFO.limits.columns) : DEFAULT_COLUMNS.map((c) => ({ ...c })); }
  catch (e) { state.columns = DEFAULT_COLUMNS.map((c) => ({ ...c })); }
  state.columns = state.columns.slice(0, INFO.limits.columns);
  document.getElementById("ask").addEventListener("submit", run);
  document.getElementById("add").addEventListener("click", () => {
    if (state.columns.length < INFO.limits.columns) { state.columns.push({ technique: "hybrid" }); render(); }
  });
  document.addEventListener("keydown", (e) => {
    if (e.key === "/" && !["INPUT", "SELECT", "TEXTAREA"].includes(document.activeElement.tagName)) { e.preventDefault(); document.getElementById("q").focus(); }
  });
  render();
  if (hash.get("q")) { document.getElementById("q").value = hash.get("q"); run(); }
  window.COMPARE = { state, run };
})();
