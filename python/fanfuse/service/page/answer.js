// The answer of a search as the page shows it: degraded, the variants, the fused list (each hit
// with its split score and, when comparing, its move), the branches on one timeline. Every text
// from the server is appended as a text node by el(); nothing here parses markup.

const COLOURS = 8; // .v0 ... .v7 in page.css: one hue per variant
const SHADES = 3; // .r0 ... .r2: one shade per retriever

// An element with properties set and children appended; a string child becomes a text node.
export function el(tag, props, ...children) {
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

export const number = (value, digits) => (typeof value === "number" ? value.toFixed(digits) : "–");
export const shown = (value) => (typeof value === "string" ? value : JSON.stringify(value));

// ----- the answer ------------------------------------------------------------------------

function settingsLine(body) {
  const parts = Object.entries(body)
    .filter(([name]) => name !== "query" && name !== "history")
    .map(([name, value]) => `${name}=${shown(value)}`);
  parts.push(body.history ? `${body.history.length} earlier turn${body.history.length === 1 ? "" : "s"}` : "no conversation");
  return parts.join(" · ");
}

export function answerView(side, body, answer, other) {
  const section = el("section", { class: "answer", "aria-label": `answer ${side.toUpperCase()}` },
    el("h2", {}, other ? `${side.toUpperCase()} ` : "Answer ", el("small", { class: "muted" }, settingsLine(body))));
  const data = answer.data || {};
  if (answer.status === 200) {
    section.append(...resultView(data, other));
  } else if (answer.status === 422 && Array.isArray(data.detail)) {
    section.append(el("p", { class: "error", role: "alert" }, "The server refused the request:"),
      el("ul", { class: "error" }, data.detail.map((error) => {
        const field = (error.loc || []).filter((part) => part !== "body").join(".") || "body";
        return el("li", {}, `${field}: ${error.msg}`);
      })));
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
      el("thead", {}, el("tr", {}, ["#", "variant", "source", "weight"].map((name) => el("th", { scope: "col" }, name)))),
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
  const colour = (p) => `v${p.variant_index % COLOURS} r${Math.max(0, retrievers.indexOf(p.retriever)) % SHADES}`;
  const added = (hit) => hit.provenance.reduce((sum, p) => sum + Math.max(0, p.contribution || 0), 0);
  const most = Math.max(1e-12, ...hits.map(added)); // the longest bar is the list's largest score
  const list = el("ol", { class: "hits" }, hits.map((hit, i) => {
    const rank = i + 1;
    const payload = Object.entries(hit.payload).filter(([key]) => key !== "title" && key !== "text");
    const shares = hit.provenance.filter((p) => typeof p.contribution === "number");
    const label = `score ${number(hit.score, 5)} split by variant and retriever`;
    const bar = el("div", { class: "bar", role: "img", "aria-label": label });
    for (const p of shares) {
      if (p.contribution <= 0) continue;
      const piece = el("span", {
        class: colour(p),
        title: `[${p.variant_index}] ${p.retriever} #${p.rank ?? "–"}: +${number(p.contribution, 5)}`,
      });
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
      payload.length
        ? el("dl", { class: "payload" }, payload.map(([key, value]) => [el("dt", {}, key), el("dd", {}, shown(value))]))
        : null,
      shares.length ? bar : el("p", { class: "muted" }, "this method gives no share of the score per list"),
      el("ul", { class: "found" }, hit.provenance.map((p) => el("li", {},
        el("span", { class: `swatch ${colour(p)}` }),
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
    el("h3", {}, "Branches ", el("small", { class: "muted" },
      `variant × retriever on one timeline, 0–${number(end, 2)} ms${times ? ` · ${times}` : ""}`)),
    el("ol", { class: "branches" }, rows));
}
