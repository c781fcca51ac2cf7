// Vouch web page: vanilla JS, no build step, no third-party code.
// Every value from the server reaches the DOM through textContent or setAttribute on
// elements built here; nothing is parsed as HTML.
"use strict";

(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const MAX_TABLE_ROWS = 200;
  const state = { info: null, token: sessionStorage.getItem("vouch-token") || "", busy: false, warnings: {} };

  // ---- DOM helpers ---------------------------------------------------------------------
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }
  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG, tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }
  function setAttrs(node, attrs) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") node.textContent = String(v);
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
  }
  function append(node, children) {
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      node.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
    }
  }
  const $ = (id) => document.getElementById(id);
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

  // ---- words ---------------------------------------------------------------------------
  const GATE = {
    pass: ["PASS", "Shown: the evidence supports this answer."],
    flag: ["FLAG", "Shown with a warning: check the reasons before relying on it."],
    abstain: ["ABSTAIN", "Withheld: the evidence does not support this answer. The result below is for inspection only."],
  };
  const CHOICE_NAMES = {
    ties: "Ties at a cut-off", counting_unit: "Counting unit (rows or distinct)",
    missing_values: "Missing values (NULL)", population_scope: "Population scope (inner or outer join)",
    strict_cutoff: "Strict or inclusive cutoff", negation: "Negation", quantifier: "Quantifier",
    aggregation_level: "Aggregation level", condition_linkage: "Condition linkage",
    time_scope: "Time scope", value_matching: "Value matching", referent_column: "Referent column",
    relationship_role: "Relationship role", calculation: "Calculation",
    interpretation: "Interpretation (the question reads more than one way)",
  };
  const choiceName = (t) => CHOICE_NAMES[t] || String(t).replace(/_/g, " ");
  const humanName = (n) => String(n).replace(/_/g, " ");

  // ---- API -----------------------------------------------------------------------------
  async function api(method, path, body) {
    const headers = { "Accept": "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (state.token) headers["Authorization"] = "Bearer " + state.token;
    let res;
    try {
      res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    } catch (e) {
      throw { status: 0, kind: "network", message: "cannot reach the server (" + e.message + ")" };
    }
    let data = null;
    try { data = await res.json(); } catch (e) { data = null; }
    if (!res.ok) {
      const err = (data && data.error) || { kind: "http", message: res.status + " " + res.statusText };
      if (res.status === 401) showTokenBar();
      throw { status: res.status, kind: err.kind, message: err.message };
    }
    return data;
  }

  function showTokenBar() {
    $("token-bar").hidden = false;
    $("token").focus();
  }

  // ---- start ---------------------------------------------------------------------------
  async function start() {
    $("form").addEventListener("submit", (e) => { e.preventDefault(); run("check"); });
    $("ask-btn").addEventListener("click", () => run("ask"));
    $("add-sql").addEventListener("click", () => { addCandidate("").focus(); });
    $("form").addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        run(sqlTexts().length ? "check" : "ask");
      }
    });
    $("db").addEventListener("change", () => { showRoleWarning(); loadExamples(); });
    $("token-form").addEventListener("submit", (e) => {
      e.preventDefault();
      state.token = $("token").value.trim();
      sessionStorage.setItem("vouch-token", state.token);
      $("token-bar").hidden = true;
      boot();
    });
    addCandidate("");
    window.addEventListener("hashchange", () => { if (state.info) runFromHash(); });
    await boot();
    if (state.info) runFromHash();
  }

  async function boot() {
    let info;
    try {
      info = await api("GET", "/api/info");
    } catch (err) {
      showError(err.status === 401 ? "A token is needed" : "The server did not answer", err);
      return;
    }
    state.info = info;
    const select = $("db");
    const previous = select.value;
    clear(select);
    for (const name of info.databases) select.appendChild(el("option", { value: name, text: name }));
    if (info.databases.includes(previous)) select.value = previous;
    $("server-note").textContent = "query limit " + info.limits.query_timeout_s + " s · request limit " +
      info.limits.request_timeout_s + " s" + (info.ask.available ? " · model " + info.ask.model : "");
    const askBtn = $("ask-btn");
    askBtn.disabled = !info.ask.available;
    $("ask-note").textContent = info.ask.available
      ? "Ask sends the question to " + info.ask.model + " and vouches for its answer."
      : "Ask is off: " + info.ask.reason;
    await loadWarnings();
    await loadExamples();
  }

  // A database opened as a role that may write or reach the server's files is served only
  // when the operator allowed it; the page says so for as long as that database is chosen.
  async function loadWarnings() {
    state.warnings = {};
    try {
      const data = await api("GET", "/api/databases");
      for (const d of data.databases) if (d.warning) state.warnings[d.name] = d.warning;
    } catch (err) { /* the listing is advisory; checks still report their own errors */ }
    showRoleWarning();
  }

  function showRoleWarning() {
    const box = $("db-warning"), text = state.warnings[$("db").value];
    box.hidden = !text;
    box.textContent = text ? "Warning: database " + $("db").value + ": " + text : "";
  }

  async function loadExamples() {
    const box = $("examples-box"), list = $("examples");
    clear(list);
    box.hidden = true;
    const db = $("db").value;
    if (!db) return;
    let data;
    try { data = await api("GET", "/api/examples/" + encodeURIComponent(db)); } catch (err) { return; }
    if (!data.examples.length) return;
    for (const ex of data.examples) {
      const btn = el("button", { type: "button", title: ex.shows || "" },
        el("span", { class: "t", text: ex.title }), el("span", { class: "q", text: ex.question }));
      btn.addEventListener("click", () => useExample(ex));
      list.appendChild(el("li", {}, btn));
    }
    box.hidden = false;
  }

  function useExample(ex) {
    $("question").value = ex.question;
    clear($("candidates"));
    addCandidate(ex.sql);
    if (ex.alt_sql) addCandidate(ex.alt_sql);
    $("answer-text").value = "";
    $("hint").value = "";
    run("check");
  }

  // ---- the form ------------------------------------------------------------------------
  function addCandidate(text) {
    const box = $("candidates");
    const n = box.children.length + 1;
    const id = "sql-" + n + "-" + Date.now();
    const area = el("textarea", { id, class: "sql", rows: 4, spellcheck: "false",
      placeholder: n === 1 ? "SELECT name, price FROM products ORDER BY price DESC LIMIT 1" : "another SQL answer to the same question" });
    area.value = text;
    const label = el("label", { for: id, text: n === 1 ? "SQL to check" : "Another SQL answer (sample " + n + ")" });
    const wrap = el("div", { class: "candidate" }, label, area);
    if (n > 1) {
      wrap.appendChild(el("button", { type: "button", class: "link-button remove", "aria-label": "Remove SQL answer " + n,
        text: "remove", onclick: () => { wrap.remove(); relabel(); } }));
    }
    box.appendChild(wrap);
    return area;
  }
  function relabel() {
    [...$("candidates").children].forEach((wrap, i) => {
      const label = wrap.querySelector("label");
      label.textContent = i === 0 ? "SQL to check" : "Another SQL answer (sample " + (i + 1) + ")";
    });
  }
  function sqlTexts() {
    return [...$("candidates").querySelectorAll("textarea")].map((t) => t.value.trim()).filter(Boolean);
  }

  async function run(mode) {
    if (state.busy) return;
    const question = $("question").value.trim();
    const db = $("db").value;
    if (!question) { showError("A question is needed", { message: "type the question the SQL answers" }); $("question").focus(); return; }
    let path, body;
    if (mode === "check") {
      const candidates = sqlTexts();
      if (!candidates.length) {
        showError("SQL is needed to check", { message: state.info && state.info.ask.available
          ? "paste the SQL that answers the question, or use Ask" : "paste the SQL that answers the question" });
        $("candidates").querySelector("textarea").focus();
        return;
      }
      body = { db, question, candidates };
      const answerText = $("answer-text").value.trim(), hint = $("hint").value.trim();
      if (answerText) body.answer_text = answerText;
      if (hint) body.hint = hint;
      path = "/api/check";
    } else {
      if (!state.info || !state.info.ask.available) {
        showError("Ask is not available", { message: state.info ? state.info.ask.reason : "the server did not answer" });
        return;
      }
      body = { db, question };
      const hint = $("hint").value.trim();
      if (hint) body.hint = hint;
      path = "/api/ask";
    }
    setBusy(true, mode);
    try {
      const answer = await api("POST", path, body);
      renderAnswer(answer, mode === "check" ? body : null);
    } catch (err) {
      showError(mode === "check" ? "The check did not run" : "The question was not answered", err);
    } finally {
      setBusy(false, mode);
    }
  }

  function setBusy(busy, mode) {
    state.busy = busy;
    $("output").setAttribute("aria-busy", busy ? "true" : "false");
    $("check-btn").disabled = busy;
    $("ask-btn").disabled = busy || !(state.info && state.info.ask.available);
    $("check-btn").textContent = busy && mode === "check" ? "Checking…" : "Check SQL";
    $("ask-btn").textContent = busy && mode === "ask" ? "Asking…" : "Ask";
  }

  function showError(title, err) {
    const body = $("output-body");
    clear(body);
    body.appendChild(el("div", { class: "error-box", role: "alert" },
      el("h3", { text: title }), el("p", { text: err.message || String(err) })));
  }

  // ---- the answer ------------------------------------------------------------------------
  function renderAnswer(a, checkBody, before) {
    const body = $("output-body");
    clear(body);
    state.answer = a;
    if (before) body.appendChild(pickComparison(before, a));
    body.appendChild(verdictCard(a));
    body.appendChild(answerActions(a, checkBody));
    const text = a.answer_text || a.text;
    if (text) body.appendChild(section("Answer", el("p", { class: "answer-text", text })));
    const shown = a.shown || null;
    if (shown && shown.sql) {
      const r = shown.result;
      body.appendChild(section(["Result", r && !r.error ? el("span", { class: "row-count", text: " · " + rowsLabel(r) }) : null],
        resultView(r), { id: "result-section" }));
      const chart = r && !r.error ? chartFor(r) : null;
      if (chart) body.appendChild(section("Chart", chart, { class: "chart" }));
    }
    const choices = a.choices || [];
    if (choices.length) body.appendChild(choicesView(choices, shown));
    if (a.interpretations && a.interpretations.length > 1) body.appendChild(interpretationsView(a.interpretations, shown));
    if (shown && shown.sql) body.appendChild(section("SQL", el("pre", { class: "sql", text: shown.sql })));
    if (a.checks && a.checks.length) body.appendChild(checksView(a.checks));
    body.appendChild(traceView(a));
    $("output").focus({ preventScroll: true });
  }

  function section(title, content, attrs) {
    const h = el("h3", {}, title);
    return el("section", attrs || {}, h, content);
  }

  function verdictCard(a) {
    const v = a.verdict || { gate: "abstain", score: 0, reasons: [] };
    const [label, meaning] = GATE[v.gate] || [String(v.gate).toUpperCase(), ""];
    const reasons = el("ul", { class: "reasons", "aria-label": "Reasons" });
    const checks = Object.fromEntries((a.checks || []).map((c) => [c.name, c]));
    for (const r of v.reasons || []) {
      const text = String(r);
      let item;
      if (text.startsWith("open_choice:")) {
        item = el("li", {}, el("strong", { text: "Open choice: " }), choiceName(text.slice(12)),
          el("span", { class: "detail", text: " — the wording leaves this open and the answer changes with it" }));
      } else if (checks[text]) {
        item = el("li", {}, el("strong", { text: humanName(text) }), el("span", { class: "detail", text: " — " + checks[text].detail }));
      } else {
        item = el("li", { text });
      }
      reasons.appendChild(item);
    }
    if (!(v.reasons || []).length) reasons.appendChild(el("li", { class: "detail", text: "no check lowered the score" }));
    const right = el("div", {},
      el("p", { class: "meaning", text: meaning }),
      el("p", { class: "score muted small", text: "score " + Number(v.score).toFixed(2) + " under rule " + v.rule + " (a score, not a probability)" }),
      reasons);
    const p = a.premise;
    if (p && p.is_valid === false) {
      right.appendChild(el("div", { class: "premise" },
        el("strong", { text: "The question has a flaw" + (p.flaw_code ? " (" + p.flaw_code + ")" : "") + ": " }),
        p.reason || "", p.clarification ? el("div", {}, el("em", { text: "To clarify: " }), p.clarification) : null));
    }
    return el("section", { class: "verdict " + v.gate, "aria-labelledby": "verdict-badge" },
      el("span", { class: "badge " + v.gate, id: "verdict-badge", role: "status", "aria-label": "Verdict: " + label, text: label }),
      right);
  }

  function rowsLabel(r) {
    return r.row_count + (r.row_count === 1 ? " row" : " rows") + (r.truncated ? " (cut off at the row cap)" : "") +
      " · " + Number(r.elapsed_ms).toFixed(1) + " ms";
  }

  function resultView(r) {
    if (!r) return el("p", { class: "muted", text: "no result" });
    if (r.error) return el("p", { class: "result-error", text: r.error.kind + ": " + r.error.message });
    if (!r.rows.length) return el("p", { class: "muted", text: "The query returned no rows." });
    const numeric = r.columns.map((_, i) => r.rows.every((row) => row[i] === null || typeof row[i] === "number"));
    const head = el("tr", {}, r.columns.map((c, i) => el("th", { scope: "col", class: numeric[i] ? "num" : null, text: c })));
    const rows = r.rows.slice(0, MAX_TABLE_ROWS).map((row) =>
      el("tr", {}, row.map((v, i) => el("td", { class: numeric[i] ? "num" : null }, cell(v)))));
    const table = el("table", {}, el("thead", {}, head), el("tbody", {}, rows));
    const wrap = el("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": "result table" }, table);
    const more = r.rows.length > MAX_TABLE_ROWS
      ? el("p", { class: "note", text: "Showing " + MAX_TABLE_ROWS + " of " + r.rows.length + " rows." }) : null;
    return el("div", {}, wrap, more);
  }

  function cell(v) {
    if (v === null || v === undefined) return el("span", { class: "null", text: "NULL" });
    if (typeof v === "number") return formatNumber(v);
    return String(v);
  }
  function formatNumber(v) {
    if (Number.isInteger(v)) return String(v);
    return String(Math.round(v * 10000) / 10000);
  }

  // ---- charts: small SVG drawn here ------------------------------------------------------
  const DATE_RE = /^\d{4}(-\d{2}(-\d{2}([ T][\d:.]+Z?)?)?)?$/;
  function toTime(v, name) {
    if (typeof v === "string" && DATE_RE.test(v)) {
      const [y, m, d] = v.slice(0, 10).split("-");
      return Date.UTC(+y, m ? +m - 1 : 0, d ? +d : 1);
    }
    if (typeof v === "number" && Number.isInteger(v) && v >= 1800 && v <= 2200 && /year|yr/i.test(name)) return Date.UTC(v, 0, 1);
    return null;
  }

  function chartFor(r) {
    if (!r || r.rows.length < 2 || r.rows.length > 400 || r.columns.length < 2) return null;
    const isNum = (i) => r.rows.every((row) => row[i] === null || typeof row[i] === "number") && r.rows.some((row) => typeof row[i] === "number");
    const numCols = r.columns.map((_, i) => i).filter(isNum);
    if (!numCols.length) return null;
    // A time series: a date-like column and a numeric one.
    for (let i = 0; i < r.columns.length; i++) {
      if (r.rows.every((row) => toTime(row[i], r.columns[i]) !== null)) {
        const y = numCols.filter((j) => j !== i).pop();
        if (y === undefined) break;
        const pts = r.rows.filter((row) => typeof row[y] === "number")
          .map((row) => ({ x: toTime(row[i], r.columns[i]), y: row[y], label: String(row[i]) }))
          .sort((a, b) => a.x - b.x);
        if (pts.length >= 2) return lineChart(pts, r.columns[i], r.columns[y]);
      }
    }
    // Label–value: a text label column (or the first column) and a numeric value column.
    if (r.rows.length > 40) return null;
    const textCols = r.columns.map((_, i) => i).filter((i) => !numCols.includes(i));
    const value = numCols[numCols.length - 1];
    const label = textCols.length ? textCols[0] : (value === 0 ? null : 0);
    if (label === null || label === undefined || label === value) return null;
    const bars = r.rows.map((row) => ({ label: row[label] === null ? "NULL" : String(row[label]), value: row[value] }))
      .filter((b) => typeof b.value === "number");
    if (bars.length < 2) return null;
    return barChart(bars, r.columns[label], r.columns[value]);
  }

  function niceMax(v) {
    if (v <= 0) return 0;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
    return 10 * p;
  }

  function barChart(bars, labelName, valueName) {
    const W = 680, rowH = 22, left = 190, right = 70, top = 24;
    const H = top + bars.length * rowH + 10;
    const lo = Math.min(0, ...bars.map((b) => b.value)), hi = Math.max(0, ...bars.map((b) => b.value));
    const span = (hi - lo) || 1;
    const x = (v) => left + ((v - lo) / span) * (W - left - right);
    const g = svg("svg", { viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img",
      "aria-label": "Bar chart of " + valueName + " by " + labelName });
    g.appendChild(svg("title", { text: valueName + " by " + labelName }));
    g.appendChild(svg("text", { x: left, y: 14, text: valueName + " by " + labelName }));
    bars.forEach((b, i) => {
      const y = top + i * rowH;
      const x0 = x(Math.min(0, b.value)), x1 = x(Math.max(0, b.value));
      const name = b.label.length > 28 ? b.label.slice(0, 27) + "…" : b.label;
      g.appendChild(svg("text", { x: left - 6, y: y + 15, "text-anchor": "end", text: name }));
      const rect = svg("rect", { class: "bar", x: x0, y: y + 3, width: Math.max(1, x1 - x0), height: rowH - 6, rx: 2 });
      rect.appendChild(svg("title", { text: b.label + ": " + formatNumber(b.value) }));
      g.appendChild(rect);
      g.appendChild(svg("text", { class: "value", x: x1 + 4, y: y + 15, text: formatNumber(b.value) }));
    });
    g.appendChild(svg("line", { class: "axis", x1: x(0), x2: x(0), y1: top, y2: H - 8 }));
    return g;
  }

  function lineChart(pts, xName, yName) {
    const W = 680, H = 260, left = 64, right = 18, top = 24, bottom = 36;
    const ys = pts.map((p) => p.y);
    const lo = Math.min(0, ...ys), hi = niceMax(Math.max(...ys)) || 1;
    const x0 = pts[0].x, x1 = pts[pts.length - 1].x;
    const x = (v) => left + (x1 === x0 ? 0.5 : (v - x0) / (x1 - x0)) * (W - left - right);
    const y = (v) => top + (1 - (v - lo) / ((hi - lo) || 1)) * (H - top - bottom);
    const g = svg("svg", { viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img",
      "aria-label": "Line chart of " + yName + " over " + xName });
    g.appendChild(svg("title", { text: yName + " over " + xName }));
    g.appendChild(svg("text", { x: left, y: 14, text: yName + " over " + xName }));
    for (let k = 0; k <= 4; k++) {
      const v = lo + (k / 4) * (hi - lo);
      g.appendChild(svg("line", { class: "grid", x1: left, x2: W - right, y1: y(v), y2: y(v) }));
      g.appendChild(svg("text", { x: left - 6, y: y(v) + 4, "text-anchor": "end", text: formatNumber(v) }));
    }
    g.appendChild(svg("line", { class: "axis", x1: left, x2: W - right, y1: y(lo), y2: y(lo) }));
    const ticks = pts.length <= 6 ? pts : [0, 0.25, 0.5, 0.75, 1].map((f) => pts[Math.round(f * (pts.length - 1))]);
    ticks.forEach((p, k) => {
      const anchor = ticks.length > 1 && k === 0 ? "start" : ticks.length > 1 && k === ticks.length - 1 ? "end" : "middle";
      g.appendChild(svg("text", { x: x(p.x), y: H - bottom + 16, "text-anchor": anchor, text: p.label }));
    });
    g.appendChild(svg("polyline", { class: "line", points: pts.map((p) => x(p.x).toFixed(1) + "," + y(p.y).toFixed(1)).join(" ") }));
    if (pts.length <= 60) {
      for (const p of pts) {
        const c = svg("circle", { class: "dot", cx: x(p.x), cy: y(p.y), r: 3 });
        c.appendChild(svg("title", { text: p.label + ": " + formatNumber(p.y) }));
        g.appendChild(c);
      }
    }
    return g;
  }

  // ---- open choices as tabs -----------------------------------------------------------------
  // Tabs with the WAI-ARIA pattern: one tab stop, arrows/Home/End move and select.
  function tabsView(id, title, intro, items) {
    const sec = el("section", { id }, el("h3", { text: title }), el("p", { class: "muted small", text: intro }));
    const list = el("div", { role: "tablist", "aria-label": title });
    const panels = [];
    const tabs = items.map((item, i) => {
      const tabId = id + "-tab-" + i, panelId = id + "-panel-" + i;
      const tab = el("button", { type: "button", role: "tab", id: tabId, "aria-controls": panelId,
        "aria-selected": i === 0 ? "true" : "false", tabindex: i === 0 ? "0" : "-1", text: item.label });
      panels.push(el("div", { role: "tabpanel", id: panelId, "aria-labelledby": tabId, tabindex: "0", hidden: i !== 0 }, item.content));
      list.appendChild(tab);
      return tab;
    });
    function select(i, focus) {
      tabs.forEach((t, j) => {
        t.setAttribute("aria-selected", j === i ? "true" : "false");
        t.setAttribute("tabindex", j === i ? "0" : "-1");
        panels[j].hidden = j !== i;
      });
      if (focus) tabs[i].focus();
    }
    tabs.forEach((t, i) => {
      t.addEventListener("click", () => select(i, false));
      t.addEventListener("keydown", (e) => {
        const n = tabs.length;
        const to = { ArrowRight: (i + 1) % n, ArrowLeft: (i - 1 + n) % n, Home: 0, End: n - 1 }[e.key];
        if (to !== undefined) { e.preventDefault(); select(to, true); }
      });
    });
    append(sec, [list, panels]);
    return sec;
  }

  function sideBySide(shown, otherTitle, other) {
    const label = (r) => (r && !r.error ? " · " + rowsLabel(r) : "");
    return el("div", { class: "side-by-side" },
      el("div", { class: "shown-side" }, el("h4", { text: "Shown answer" + label(shown ? shown.result : null) }),
        resultView(shown ? shown.result : null)),
      el("div", { class: "alt-side" }, el("h4", { text: otherTitle + label(other) }), resultView(other)));
  }

  function choicesView(choices, shown) {
    return tabsView("choices", "Open choices",
      "Other reasonable readings of the question. Each tab runs that reading and shows its result beside the shown one.",
      choices.map((c) => ({
        label: choiceName(c.type),
        content: [
          el("p", { text: c.description }),
          c.settled_by ? el("p", { class: "settled", text: "Settled by the wording: “" + c.settled_by + "”" })
            : c.differs ? el("p", { class: "differs", text: "This reading gives a different answer." })
            : el("p", { class: "settled", text: "This reading gives the same answer." }),
          sideBySide(shown, "This reading", c.result),
          el("h4", { text: "SQL of this reading" }), el("pre", { class: "sql", text: c.sql }),
        ],
      })));
  }

  // ``ask`` lists the interpretations it computed; the shown one is the top-level answer.
  function interpretationsView(items, shown) {
    return tabsView("interpretations", "Interpretations",
      "The readings the model computed. Each tab shows that reading's answer beside the shown one.",
      items.map((it, i) => {
        const own = it.answer;
        const content = [el("p", { text: it.text })];
        if (it.stated) content.push(el("p", { class: "muted", text: "As the SQL states it: " + it.stated }));
        if (it.assumptions && it.assumptions.length) {
          content.push(el("ul", { "aria-label": "Assumptions" }, it.assumptions.map((x) => el("li", { text: x }))));
        }
        if (it.shown) content.push(el("p", { class: "settled", text: "This is the interpretation shown above." }));
        else if (it.same_result_as !== null && it.same_result_as !== undefined) {
          content.push(el("p", { class: "settled", text: "Same result as interpretation " + (it.same_result_as + 1) + "." }));
        }
        if (!it.shown && own) {
          const g = own.verdict ? own.verdict.gate : null;
          if (g) content.push(el("p", {}, el("span", { class: "badge " + g, text: (GATE[g] || [g])[0] }), " for this reading"));
          content.push(sideBySide(shown, "This reading", own.shown ? own.shown.result : null));
          if (own.shown && own.shown.sql) content.push(el("h4", { text: "SQL of this reading" }), el("pre", { class: "sql", text: own.shown.sql }));
        }
        if (it.clause) content.push(el("p", { class: "muted small", text: "Picking it appends: “" + it.clause + "”" }));
        if (!it.shown && !it.picked && it.clause && state.info && state.info.ask.available) {
          content.push(el("button", { type: "button", class: "pick", text: "Pick this reading",
            "aria-describedby": "pick-note-" + i, onclick: () => pickReading(i + 1) }),
            el("span", { id: "pick-note-" + i, class: "muted small",
              text: " asks the model again with this reading's clause and shows the new answer beside this one" }));
        }
        return { label: (i + 1) + ". " + (it.shown ? "shown" : "reading " + (i + 1)), content };
      }));
  }

  // ---- phase 2, download, permalink ---------------------------------------------------------
  // Phase 2: the same request plus the picked reading's clause, answered again by the model
  // (POST /api/refine); the new answer is shown with the old one beside it.
  async function pickReading(n) {
    const old = state.answer;
    if (!old || state.busy) return;
    const body = { db: $("db").value, question: old.question, pick: n,
      interpretations: old.interpretations.map((it) => ({ text: it.text, clause: it.clause || "" })) };
    const hint = $("hint").value.trim();
    if (hint) body.hint = hint;
    setBusy(true, "ask");
    try {
      const fresh = await api("POST", "/api/refine", body);
      renderAnswer(fresh, null, old);
    } catch (err) {
      showError("The picked reading was not answered", err);
    } finally {
      setBusy(false, "ask");
    }
  }

  function pickComparison(before, after) {
    const side = (title, a) => {
      const v = a.verdict || { gate: "abstain" };
      const r = a.shown ? a.shown.result : null;
      return el("div", {}, el("h4", { text: title }),
        el("p", {}, el("span", { class: "badge " + v.gate, text: (GATE[v.gate] || [v.gate])[0] })),
        el("p", { class: "muted small", text: a.question }),
        a.answer_text || a.text ? el("p", { class: "answer-text", text: a.answer_text || a.text }) : null,
        resultView(r));
    };
    return section("Before and after the pick", el("div", { class: "side-by-side" },
      side("Before the pick", before), side("After the pick", after)), { id: "pick-comparison" });
  }

  // Any answer can be saved as its JSON; a check can be linked to: the link holds the request
  // (database name, question, SQL) in the URL's fragment, which never reaches the server, and
  // opening it runs the same check again.
  function answerActions(a, checkBody) {
    const bar = el("div", { class: "actions answer-actions" });
    const download = el("button", { type: "button", text: "Download JSON" });
    download.addEventListener("click", () => {
      const blob = new Blob([JSON.stringify(a, null, 2) + "\n"], { type: "application/json" });
      const url = URL.createObjectURL(blob);
      const link = el("a", { href: url, download: "vouch-answer.json" });
      document.body.appendChild(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 1000);
    });
    bar.appendChild(download);
    if (checkBody) {
      const href = "#check=" + encodeURIComponent(JSON.stringify(checkBody));
      bar.appendChild(el("a", { href, class: "permalink", text: "Link to this check" }));
      if (location.hash !== href) history.replaceState(null, "", href);
    }
    return bar;
  }

  function runFromHash() {
    if (!location.hash.startsWith("#check=")) return false;
    let req;
    try { req = JSON.parse(decodeURIComponent(location.hash.slice(7))); } catch (e) { req = null; }
    if (!req || typeof req.question !== "string" || !Array.isArray(req.candidates)) {
      showError("This link holds no check", { message: "the part after #check= is not a check request" });
      return true;
    }
    if (req.db && state.info && state.info.databases.includes(req.db)) $("db").value = req.db;
    $("question").value = req.question;
    clear($("candidates"));
    (req.candidates.length ? req.candidates : [""]).forEach((sql) => addCandidate(String(sql)));
    $("answer-text").value = req.answer_text || "";
    $("hint").value = req.hint || "";
    run("check");
    return true;
  }

  // ---- checks and trace ------------------------------------------------------------------
  function checksView(checks) {
    const sorted = [...checks].sort((a, b) => Number(b.fired) - Number(a.fired));
    const rows = sorted.map((c) => el("tr", { class: c.fired ? "fired" : null },
      el("td", { text: humanName(c.name) }), el("td", {}, el("span", { class: "kind " + c.kind, text: c.kind })),
      el("td", { class: c.fired ? "fired-yes" : "muted", text: c.fired ? "fired" : "ok" }), el("td", { text: c.detail })));
    const table = el("table", {}, el("thead", {}, el("tr", {},
      ["check", "kind", "", "detail"].map((t) => el("th", { scope: "col", text: t })))), el("tbody", {}, rows));
    const fired = checks.filter((c) => c.fired).length;
    return section(["Checks ", el("span", { class: "row-count", text: "· " + fired + " of " + checks.length + " fired" })],
      el("div", { class: "table-wrap" }, table), { id: "checks" });
  }

  function traceView(a) {
    const parts = [];
    const ag = a.agreement;
    const n = (a.candidates || []).length;
    // The wording of display.agreement_text, which the CLI, the REPL and notebooks print.
    parts.push(el("p", { text: "Agreement: " + (n === 1 ? "unmeasured (one candidate)"
      : ag === null || ag === undefined ? "none (the shown answer has no result)"
      : Number(ag).toFixed(2) + " over " + n + " candidates") +
      (a.agreement_bounds && a.agreement_bounds.truncated_pairs ? " · " + a.agreement_bounds.truncated_pairs + " truncated pair(s), lower bound " + a.agreement_bounds.lower_bound : "") }));
    const cands = a.candidates || [];
    if (cands.length) {
      const rows = cands.map((c, i) => el("tr", {},
        el("td", { class: "num", text: String(i + 1) + (i === 0 ? " (shown)" : "") }),
        el("td", { class: "num", text: c.cluster === null || c.cluster === undefined ? "—" : String(c.cluster) }),
        el("td", { class: "num", text: c.result && !c.result.error ? String(c.result.row_count) + (c.result.truncated ? "+" : "") : "—" }),
        el("td", { class: "num", text: c.result ? Number(c.result.elapsed_ms).toFixed(1) : "—" }),
        el("td", { text: c.result && c.result.error ? c.result.error.kind + ": " + c.result.error.message : "ran" }),
        el("td", {}, el("details", { class: "trace-sql" }, el("summary", { text: "SQL" }), el("pre", { class: "sql", text: c.sql })))));
      parts.push(el("div", { class: "table-wrap" }, el("table", {},
        el("thead", {}, el("tr", {}, ["#", "cluster", "rows", "ms", "status", "SQL"].map((t, i) => el("th", { scope: "col", class: i < 4 ? "num" : null, text: t })))),
        el("tbody", {}, rows))));
    }
    const choiceRuns = (a.choices || []).filter((c) => c.result);
    if (choiceRuns.length) {
      parts.push(el("p", { class: "note", text: "Choice queries: " + choiceRuns.map((c) =>
        c.type + " " + (c.result.error ? "failed" : c.result.row_count + " rows, " + Number(c.result.elapsed_ms).toFixed(1) + " ms")).join(" · ") }));
    }
    if (a.usage) parts.push(el("details", {}, el("summary", { text: "Model usage" }), el("pre", { class: "sql", text: JSON.stringify(a.usage, null, 2) })));
    return section("Trace", el("div", {}, parts), { id: "trace" });
  }

  document.addEventListener("DOMContentLoaded", start);
})();
