// The search page of `fanfuse serve`. Everything it shows from the server (document text,
// payloads, variants, errors) is written with text nodes: el() appends strings as text, and no
// code here parses markup. The options come from GET /options, so the page has no list of its own.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const SIDES = ["a", "b"];
  const COLOURS = 8; // .v0 ... .v7 in page.css: one hue per variant
  const SHADES = 3; // .r0 ... .r2: one shade per retriever
  let fields = []; // the request fields, as GET /options lists them
  let roles = ["user"];
  let started = 0; // searches started, so that only the latest one's answer is shown

  // An element with properties set and children appended; a string child becomes a text node.
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (key === "class") node.className = value;
      else if (key.startsWith("aria-") || key.startsWith("data-") || key === "role") node.setAttribute(key, value);
      else node[key] = value;
    }
    for (const child of children.flat(Infinity)) {
      if (child !== null && child !== undefined && child !== false) node.append(child);
    }
    return node;
  }

  const number = (value, digits) => (typeof value === "number" ? value.toFixed(digits) : "–");
  const shown = (value) => (typeof value === "string" ? value : JSON.stringify(value));

  // ----- options ---------------------------------------------------------------------------

  function control(side, field) {
    const id = `${side}-${field.name}`;
    const known = field.default !== null && field.default !== undefined;
    const fallback = known ? `default ${shown(field.default)}` : "default";
    let box;
    if (field.enum || field.type === "boolean") {
      const values = field.enum || [true, false];
      box = el("select", { id }, el("option", { value: "" }, fallback),
        values.map((value) => el("option", { value: String(value) }, String(value))));
    } else if (field.type === "integer" || field.type === "number") {
      box = el("input", { id, type: "number", inputMode: "decimal", placeholder: fallback });
      box.step = field.type === "integer" ? "1" : "any";
      if ("minimum" in field) box.min = field.minimum;
      if ("maximum" in field) box.max = field.maximum;
    } else {
      const hint = field.type === "object" ? '{"key": "value"}' : fallback;
      box = el("input", { id, type: "text", placeholder: hint, spellcheck: false });
    }
    box.dataset.field = field.name;
    return el("div", { class: "option" },
      el("label", { htmlFor: id }, field.name),
      box,
      el("small", { class: "muted" }, field.description));
  }

  function buildOptions() {
    for (const side of SIDES) {
      const box = document.querySelector(`.options[data-side="${side}"]`);
      box.replaceChildren(...fields.map((field) => control(side, field)));
    }
  }

  const input = (side, name) => $(`${side}-${name}`);

  // The value of a control as the request's JSON, undefined when left to the server; throws an
  // Error naming the field when the text is not a value of its type.
  function parsed(field, text) {
    if (text === "") return undefined;
    if (field.type === "integer" || field.type === "number") {
      const value = Number(text);
      if (!Number.isFinite(value) || (field.type === "integer" && !Number.isInteger(value))) {
        throw new Error(`${field.name}: ${JSON.stringify(text)} is not ${field.type === "integer" ? "an integer" : "a number"}`);
      }
      return value;
    }
    if (field.type === "boolean") return text === "true";
    if (field.type === "object") {
      try {
        return JSON.parse(text);
      } catch (error) {
        throw new Error(`${field.name}: not JSON (${error.message}); write an object such as {"lang": "en"}`);
      }
    }
    return text;
  }

  // ----- conversation ----------------------------------------------------------------------

  function addTurn(role, content, focus) {
    const list = $("turns");
    const item = el("li", { class: "turn" });
    const position = list.children.length + 1;
    const who = el("select", { "aria-label": `turn ${position}: who said it` },
      roles.map((name) => el("option", { value: name, selected: name === role }, name)));
    const text = el("textarea", { rows: 2, value: content || "", "aria-label": `turn ${position}: what was said` });
    const remove = el("button", { type: "button", class: "remove", "aria-label": `remove turn ${position}` }, "Remove");
    remove.addEventListener("click", () => {
      const next = item.nextElementSibling || item.previousElementSibling;
      item.remove();
      (next ? next.querySelector("textarea") : $("add-turn")).focus();
    });
    item.append(who, text, remove);
    list.append(item);
    if (focus) text.focus();
  }

  const turns = () => [...$("turns").children]
    .map((item) => ({ role: item.querySelector("select").value, content: item.querySelector("textarea").value }))
    .filter((turn) => turn.content.trim() !== "");

  // ----- the settings in the URL -----------------------------------------------------------

  function toURL() {
    const params = new URLSearchParams();
    params.set("q", $("query").value);
    for (const turn of turns()) params.append("turn", `${turn.role}:${turn.content}`);
    const compare = $("compare").checked;
    for (const side of compare ? SIDES : ["a"]) {
      for (const field of fields) {
        const value = input(side, field.name).value;
        if (value !== "") params.set(side === "a" ? field.name : `b.${field.name}`, value);
      }
    }
    if (compare) params.set("compare", "1");
    if (compare && $("b-no-history").checked) params.set("b.history", "none");
    return `?${params}`;
  }

  function fromURL() {
    const params = new URLSearchParams(location.search);
    $("query").value = params.get("q") || "";
    $("turns").replaceChildren();
    for (const turn of params.getAll("turn")) {
      const colon = turn.indexOf(":");
      const role = colon > 0 && roles.includes(turn.slice(0, colon)) ? turn.slice(0, colon) : roles[0];
      addTurn(role, colon > 0 ? turn.slice(colon + 1) : turn, false);
    }
    for (const side of SIDES) {
      for (const field of fields) {
        input(side, field.name).value = params.get(side === "a" ? field.name : `b.${field.name}`) || "";
      }
    }
    // Options a link sets are shown open, so that what the search used is in view.
    $("settings-a").open = fields.some((field) => params.has(field.name));
    $("settings-b").open = fields.some((field) => params.has(`b.${field.name}`));
    $("compare").checked = params.get("compare") === "1";
    $("b-no-history").checked = params.get("b.history") === "none";
    showCompare();
    return params.get("q") !== null && params.get("q").trim() !== "";
  }

  function showCompare() {
    $("settings-b").hidden = !$("compare").checked;
    document.body.classList.toggle("comparing", $("compare").checked);
  }

  // ----- searching -------------------------------------------------------------------------

  function request(side) {
    const body = { query: $("query").value };
    const history = side === "b" && $("b-no-history").checked ? [] : turns();
    if (history.length) body.history = history;
    for (const field of fields) {
      const value = parsed(field, input(side, field.name).value.trim());
      if (value !== undefined) body[field.name] = value;
    }
    return body;
  }

  async function post(body) {
    try {
      const response = await fetch("search", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      const text = await response.text();
      let data = null;
      try {
        data = JSON.parse(text);
      } catch {
        data = { detail: text };
      }
      return { status: response.status, data };
    } catch (error) {
      return { status: 0, data: { detail: `the server did not answer (${error.message})` } };
    }
  }

  async function run() {
    const sides = $("compare").checked ? SIDES : ["a"];
    let bodies;
    try {
      bodies = sides.map(request);
    } catch (error) {
      status(error.message, true);
      return;
    }
    status("searching…");
    const ticket = ++started;
    const answers = await Promise.all(bodies.map(post));
    if (ticket !== started) return; // a later search was started meanwhile: its answer is shown
    const ranks = answers.map((answer) => (answer.status === 200 ? new Map(answer.data.hits.map((hit, i) => [hit.id, i + 1])) : null));
    const views = answers.map((answer, i) => {
      const other = sides.length === 2 ? { ranks: ranks[1 - i], name: sides[1 - i].toUpperCase() } : null;
      return answerView(sides[i], bodies[i], answer, other);
    });
    $("answers").replaceChildren(...views);
    const found = answers.map((answer, i) => `${sides.length === 2 ? `${sides[i].toUpperCase()}: ` : ""}${answer.status === 200 ? `${answer.data.hits.length} hits in ${number(answer.data.diagnostics.total_ms, 1)} ms` : `error ${answer.status}`}`);
    status(found.join("; "), answers.some((answer) => answer.status !== 200));
    document.body.dataset.searches = String(Number(document.body.dataset.searches || 0) + 1);
  }

  function status(text, bad) {
    $("status").textContent = text;
    $("status").classList.toggle("bad", Boolean(bad));
  }

  // ----- the answer ------------------------------------------------------------------------

  function settingsLine(body) {
    const parts = Object.entries(body)
      .filter(([name]) => name !== "query" && name !== "history")
      .map(([name, value]) => `${name}=${shown(value)}`);
    parts.push(body.history ? `${body.history.length} earlier turn${body.history.length === 1 ? "" : "s"}` : "no conversation");
    return parts.join(" · ");
  }

  function answerView(side, body, answer, other) {
    const section = el("section", { class: "answer", "aria-label": `answer ${side.toUpperCase()}` },
      el("h2", {}, other ? `${side.toUpperCase()} ` : "Answer ", el("small", { class: "muted" }, settingsLine(body))));
    const data = answer.data || {};
    if (answer.status === 200) {
      section.append(...resultView(data, other));
    } else if (answer.status === 422 && Array.isArray(data.detail)) {
      section.append(el("p", { class: "error", role: "alert" }, "The server refused the request:"),
        el("ul", { class: "error" }, data.detail.map((error) => el("li", {}, `${(error.loc || []).filter((part) => part !== "body").join(".") || "body"}: ${error.msg}`))));
    } else {
      section.append(el("p", { class: "error", role: "alert" }, `${answer.status || "no answer"}: ${shown(data.detail)}`));
      if (Array.isArray(data.branches)) section.append(branchesView(data.branches, null));
    }
    return section;
  }

  function resultView(data, other) {
    const d = data.diagnostics;
    const parts = [];
    if (d.degraded) {
      const failed = d.branches.filter((branch) => branch.error).length;
      const why = [];
      if (failed) why.push(`${failed} of ${d.branches.length} branches failed; the list fuses the others`);
      if (d.expansion.fallback_reason) why.push(`expansion fell back: ${d.expansion.fallback_reason}`);
      if (d.rerank_error) why.push(`reranking failed: ${d.rerank_error}`);
      parts.push(el("p", { class: "degraded", role: "alert" }, el("strong", {}, "degraded"), ` — ${why.join("; ")}`));
    }
    parts.push(variantsView(d), hitsView(data.hits, d, other), branchesView(d.branches, d));
    return parts;
  }

  function variantsView(d) {
    const e = d.expansion;
    const notes = [`expander ${e.expander}`, `${number(e.elapsed_ms, 2)} ms`];
    if (e.cached) notes.push("cached");
    if (e.note) notes.push(e.note);
    return el("div", { class: "block" },
      el("h3", {}, "Variants ", el("small", { class: "muted" }, notes.join(" · "))),
      el("table", { class: "variants" },
        el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "#"), el("th", { scope: "col" }, "variant"), el("th", { scope: "col" }, "source"), el("th", { scope: "col" }, "weight"))),
        el("tbody", {}, d.variants.map((variant, i) => el("tr", {},
          el("td", {}, el("span", { class: `swatch v${i % COLOURS}` }), String(i)),
          el("td", { class: "text" }, variant.text),
          el("td", {}, variant.source),
          el("td", { class: "num" }, number(variant.weight, 2)))))));
  }

  function moveView(id, rank, other) {
    if (!other) return null;
    if (!other.ranks) return el("span", { class: "move" }, `${other.name}: no answer`);
    const there = other.ranks.get(id);
    if (there === undefined) return el("span", { class: "move new", title: `not in ${other.name}'s list` }, `not in ${other.name}`);
    if (there === rank) return el("span", { class: "move same", title: `the same rank in ${other.name}` }, `= ${other.name}`);
    const up = there > rank;
    return el("span", { class: `move ${up ? "up" : "down"}`, title: `#${there} in ${other.name}` },
      `${up ? "▲" : "▼"}${Math.abs(there - rank)} (#${there} in ${other.name})`);
  }

  function hitsView(hits, d, other) {
    const retrievers = [...new Set(d.branches.map((branch) => branch.retriever))];
    const most = Math.max(1e-12, ...hits.map((hit) => hit.provenance.reduce((sum, p) => sum + Math.max(0, p.contribution || 0), 0)));
    const list = el("ol", { class: "hits" }, hits.map((hit, i) => {
      const rank = i + 1;
      const payload = Object.entries(hit.payload).filter(([key]) => key !== "title" && key !== "text");
      const shares = hit.provenance.filter((p) => typeof p.contribution === "number");
      const bar = el("div", { class: "bar", role: "img", "aria-label": `score ${number(hit.score, 5)} split by variant and retriever` });
      for (const p of shares) {
        if (p.contribution <= 0) continue;
        const piece = el("span", { class: `v${p.variant_index % COLOURS} r${Math.max(0, retrievers.indexOf(p.retriever)) % SHADES}`, title: `[${p.variant_index}] ${p.retriever} #${p.rank ?? "–"}: +${number(p.contribution, 5)}` });
        piece.style.width = `${(100 * p.contribution) / most}%`;
        bar.append(piece);
      }
      return el("li", { class: "hit" },
        el("div", { class: "head" },
          el("span", { class: "rank" }, `#${rank}`),
          el("span", { class: "title" }, shown(hit.payload.title ?? "")),
          moveView(hit.id, rank, other),
          typeof hit.rerank_score === "number" ? el("span", { class: "muted" }, `rerank ${number(hit.rerank_score, 4)}`) : null,
          el("span", { class: "score" }, number(hit.score, 5))),
        el("div", { class: "id muted" }, hit.id),
        hit.payload.text !== undefined ? el("p", { class: "doc" }, shown(hit.payload.text)) : null,
        payload.length ? el("dl", { class: "payload" }, payload.map(([key, value]) => [el("dt", {}, key), el("dd", {}, shown(value))])) : null,
        shares.length ? bar : el("p", { class: "muted" }, "this method gives no share of the score per list"),
        el("ul", { class: "found" }, hit.provenance.map((p) => el("li", {},
          el("span", { class: `swatch v${p.variant_index % COLOURS} r${Math.max(0, retrievers.indexOf(p.retriever)) % SHADES}` }),
          `[${p.variant_index}] ${p.retriever} `,
          el("span", { class: "muted" }, p.rank === null ? "not in its list" : `rank ${p.rank}`),
          typeof p.contribution === "number" ? ` +${number(p.contribution, 5)}` : ""))));
    }));
    return el("div", { class: "block" },
      el("h3", {}, "Fused list ", el("small", { class: "muted" }, `${hits.length} hits · fusion ${number(d.fusion_ms, 3)} ms`)),
      hits.length ? list : el("p", { class: "muted" }, "no hits"));
  }

  function branchesView(branches, d) {
    const end = Math.max(1e-9, d ? d.expansion.elapsed_ms : 0, ...branches.map((branch) => branch.started_ms + branch.latency_ms));
    const rows = branches.map((branch) => {
      const span = el("span", { class: `span v${branch.variant_index % COLOURS}${branch.error ? " failed" : ""}` });
      span.style.marginLeft = `${(100 * branch.started_ms) / end}%`;
      span.style.width = `${Math.max(0.5, (100 * branch.latency_ms) / end)}%`;
      const state = branch.error ? `error: ${branch.error}` : `${branch.hits} hits`;
      const flags = [branch.timed_out ? "timed out" : "", branch.skipped ? "skipped" : ""].filter(Boolean);
      return el("li", { class: branch.error ? "branch failed" : "branch" },
        el("span", { class: "who" }, `[${branch.variant_index}] ${branch.retriever}`),
        el("span", { class: "track", "aria-hidden": "true" }, span),
        el("span", { class: "what" }, `${state}, ${number(branch.latency_ms, 2)} ms${flags.length ? ` (${flags.join(", ")})` : ""}`));
    });
    if (d) {
      // The expansion runs before any branch starts: its own row, from 0.
      const span = el("span", { class: "span expansion" });
      span.style.width = `${Math.max(0.5, (100 * d.expansion.elapsed_ms) / end)}%`;
      rows.unshift(el("li", { class: "stage" },
        el("span", { class: "who" }, "expansion"),
        el("span", { class: "track", "aria-hidden": "true" }, span),
        el("span", { class: "what" }, `${d.variants.length} variants, ${number(d.expansion.elapsed_ms, 2)} ms`)));
    }
    const times = d ? `total ${number(d.total_ms, 2)} ms · fusion ${number(d.fusion_ms, 3)} ms` : "";
    return el("div", { class: "block" },
      el("h3", {}, "Branches ", el("small", { class: "muted" }, `variant × retriever on one timeline, 0–${number(end, 2)} ms${times ? ` · ${times}` : ""}`)),
      el("ol", { class: "branches" }, rows));
  }

  // ----- start -----------------------------------------------------------------------------

  async function start() {
    try {
      const [options, health] = await Promise.all(["options", "healthz"].map(async (path) => {
        const response = await fetch(path);
        if (!response.ok) throw new Error(`GET /${path} answered ${response.status}`);
        return response.json();
      }));
      fields = options.fields;
      roles = options.roles;
      $("server").textContent = `index ${health.index ?? "(in memory)"} · retrievers ${health.retrievers.join(", ")} · expander ${health.expander}`;
    } catch (error) {
      status(`the page could not read the server's options: ${error.message}`, true);
      return;
    }
    buildOptions();
    $("add-turn").addEventListener("click", () => addTurn(roles[0], "", true));
    $("compare").addEventListener("change", () => {
      if ($("compare").checked) {
        for (const field of fields) {
          if (input("b", field.name).value === "") input("b", field.name).value = input("a", field.name).value;
        }
      }
      showCompare();
    });
    $("search").addEventListener("submit", (event) => {
      event.preventDefault();
      const url = toURL();
      if (url !== location.search) history.pushState(null, "", url);
      run();
    });
    window.addEventListener("popstate", () => {
      if (fromURL()) run();
    });
    document.body.dataset.ready = "true";
    if (fromURL()) run();
  }

  start();
})();
