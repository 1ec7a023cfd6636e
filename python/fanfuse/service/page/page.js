// The search page of `fanfuse serve`: the form, the settings in the URL, the searches. Everything
// it shows from the server is written with text nodes (el() in answer.js appends strings as text),
// and no code here parses markup. The options come from GET /options: the page has no list of its
// own. A module: strict, and run once the document is parsed.

import { answerView, el, number, shown } from "./answer.js";

const $ = (id) => document.getElementById(id);
const SIDES = ["a", "b"];
let fields = []; // the request fields, as GET /options lists them
let roles = ["user"];
let renamedFields = {}; // a request field's old name: its name now, as GET /options lists them
let removedFields = {}; // a request field that is gone: why, as GET /options lists them
let started = 0; // searches started, so that only the latest one's answer is shown

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
      throw new Error(`${field.name}: ${JSON.stringify(text)} is not ${accepted(field)}`);
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

// The link's parameter of a request field on `side`.
const parameter = (side, name) => (side === "a" ? name : `b.${name}`);

// The refusal of each parameter of the link on `side` that names a field by its old name, worded
// as the service refuses the old name in a request.
function renamedIn(params, side) {
  return Object.entries(renamedFields)
    .filter(([old]) => params.has(parameter(side, old)))
    .map(([old, name]) => {
      const [from, to] = [parameter(side, old), parameter(side, name)];
      return `${from} is renamed to ${to}; use ${to}`;
    });
}

// The refusal of each parameter of the link on `side` that names a field that is gone, worded as the
// service refuses it in a request.
function removedIn(params, side) {
  return Object.entries(removedFields)
    .filter(([name]) => params.has(parameter(side, name)))
    .map(([name, why]) => `${parameter(side, name)} is removed: ${why}`);
}

// What a field's control holds, as a refusal of a link's value says it.
function accepted(field) {
  if (field.enum) return `one of ${field.enum.join(", ")}`;
  return { boolean: "true or false", integer: "an integer", number: "a number" }[field.type] || "text";
}

// The link's parameters besides the request fields.
const LINK_PARAMETERS = ["q", "turn", "compare", "b.history"];

// The fewest edits (a letter inserted, deleted or replaced) that turn `a` into `b`.
function edits(a, b) {
  let above = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(above[j] + 1, row[j - 1] + 1, above[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    above = row;
  }
  return above[b.length];
}

// The refusal of each parameter of the link that is a setting misspelt (a few edits from one of the
// page's parameters; it names those fewest edits away): a search without it would drop the setting
// unsaid. Parameters far from every setting are not the page's (links gain tracking parameters on
// their way) and are left alone.
function misspeltIn(params) {
  const known = [...LINK_PARAMETERS, ...SIDES.flatMap((side) => fields.map((f) => parameter(side, f.name)))];
  const gone = [...Object.keys(renamedFields), ...Object.keys(removedFields)];
  const old = SIDES.flatMap((side) => gone.map((name) => parameter(side, name)));
  const refused = [];
  for (const name of new Set(params.keys())) {
    if (known.includes(name) || old.includes(name)) continue;
    const counts = known.map((setting) => edits(name, setting));
    const fewest = Math.min(...counts);
    if (fewest > Math.min(Math.max(1, Math.floor(name.length / 3)), name.length - 1)) continue;
    const close = known.filter((_, at) => counts[at] === fewest);
    refused.push(`${name} is not a setting of this page (did you mean ${close.join(" or ")}?)`);
  }
  return refused;
}

function toURL() {
  const params = new URLSearchParams();
  params.set("q", $("query").value);
  for (const turn of turns()) params.append("turn", `${turn.role}:${turn.content}`);
  const compare = $("compare").checked;
  for (const side of compare ? SIDES : ["a"]) {
    for (const field of fields) {
      const value = input(side, field.name).value;
      if (value !== "") params.set(parameter(side, field.name), value);
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
  const refused = [];
  for (const turn of params.getAll("turn")) {
    const colon = turn.indexOf(":");
    if (colon > 0 && roles.includes(turn.slice(0, colon))) {
      addTurn(turn.slice(0, colon), turn.slice(colon + 1), false);
    } else {
      refused.push(`turn=${turn} is not ROLE:TEXT with ROLE one of ${roles.join(", ")}`);
    }
  }
  for (const side of SIDES) {
    for (const field of fields) {
      const given = params.get(parameter(side, field.name)) || "";
      const box = input(side, field.name);
      box.value = given;
      // A control drops a value it cannot hold (a number box "abc", a list a name it does not list):
      // searched so, the setting would be dropped unsaid.
      if (box.value !== given) {
        const named = `${parameter(side, field.name)}=${given}`;
        refused.push(`${named} is not a value of ${field.name}: ${accepted(field)}`);
      }
    }
    const renamed = [...renamedIn(params, side), ...removedIn(params, side)];
    refused.push(...renamed);
    // Options a link sets are shown open, so that what the search used (or what to set in place
    // of an old name) is in view.
    const set = fields.some((field) => params.has(parameter(side, field.name)));
    $(`settings-${side}`).open = set || renamed.length > 0;
  }
  refused.push(...misspeltIn(params));
  for (const [name, value] of [["compare", "1"], ["b.history", "none"]]) {
    const given = params.get(name);
    if (given !== null && given !== value) {
      refused.push(`${name}=${given} is not a value of ${name}: ${value} (or leave it out)`);
    }
  }
  $("compare").checked = params.get("compare") === "1";
  $("b-no-history").checked = params.get("b.history") === "none";
  showCompare();
  // A link naming a field by its old name, or a field that is gone, is refused as the service
  // refuses it, and a link with a setting misspelt, or a value its control cannot hold, is refused
  // naming the setting; none is searched: a search without that setting would drop it unsaid.
  status(refused.join("\n"), refused.length > 0);
  if (refused.length) $("answers").replaceChildren();
  return !refused.length && params.get("q") !== null && params.get("q").trim() !== "";
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
  // Each side's rank of every id, for the other side's marks (null: that side has no list).
  const ranks = answers.map((answer) => (answer.status === 200
    ? new Map(answer.data.hits.map((hit, i) => [hit.id, i + 1])) : null));
  const views = answers.map((answer, i) => {
    const other = sides.length === 2 ? { ranks: ranks[1 - i], name: sides[1 - i].toUpperCase() } : null;
    return answerView(sides[i], bodies[i], answer, other);
  });
  $("answers").replaceChildren(...views);
  const found = answers.map((answer, i) => {
    const side = sides.length === 2 ? `${sides[i].toUpperCase()}: ` : "";
    if (answer.status !== 200) return `${side}error ${answer.status}`;
    return `${side}${answer.data.hits.length} hits in ${number(answer.data.diagnostics.total_ms, 1)} ms`;
  });
  status(found.join("; "), answers.some((answer) => answer.status !== 200));
  document.body.dataset.searches = String(Number(document.body.dataset.searches || 0) + 1);
}

function status(text, bad) {
  $("status").textContent = text;
  $("status").classList.toggle("bad", Boolean(bad));
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
    renamedFields = options.renamed_fields;
    removedFields = options.removed_fields;
    const index = health.index ?? "(in memory)";
    $("server").textContent = `index ${index} · retrievers ${health.retrievers.join(", ")} · expander ${health.expander}`;
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
