// The toolrouterd console (docs/approvals.md "Console"): plain DOM over the JSON API
// (api/openapi.yaml). Data only ever enters the page as text (textContent),
// never as markup.
"use strict";

const KEY = "toolrouterd.key";
const REFRESH_MS = 3000;
const $ = (id) => document.getElementById(id);

// el builds an element: attrs (class, data-*, on* handlers, others as
// attributes) and children (nodes, or strings as text).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null) continue;
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children.flat(Infinity)) if (c != null) e.append(c instanceof Node ? c : String(c));
  return e;
}

const json = (v) => el("pre", { class: "json" }, JSON.stringify(v, null, 2));
const when = (s) => (s ? new Date(s).toLocaleString() : "—");
const badge = (status) => el("span", { class: "badge " + status }, status.replace(/_/g, " "));
const fields = (pairs) => el("dl", null, pairs.filter(([, v]) => v != null && v !== "").map(([k, v]) => [el("dt", null, k), el("dd", null, v)]));

function show(id, text) {
  $(id).textContent = text || "";
  $(id).hidden = !text;
}

// api calls the JSON API with the key of this tab; problems become errors
// carrying their detail.
async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  const key = sessionStorage.getItem(KEY);
  if (key) headers.Authorization = "Bearer " + key;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const resp = await fetch(path, { method, headers, cache: "no-store", body: body === undefined ? undefined : JSON.stringify(body) });
  const data = await resp.json().catch(() => null);
  if (resp.status === 401) {
    signOut();
    throw new Error("The key was refused: " + ((data && data.detail) || "401"));
  }
  if (!resp.ok) throw new Error((data && (data.detail || data.title)) || `${resp.status} ${resp.statusText}`);
  return data;
}

// guarded runs f, showing its error (or clearing the last one).
async function guarded(f) {
  try {
    await f();
    show("error", "");
  } catch (e) {
    show("error", e.message);
  }
}

// --- approvals inbox

// diffView shows a definition diff line by line, removed and added lines
// marked (docs/trusting-tools.md "Pinned definitions").
const diffView = (diff) => el("pre", { class: "diff" }, (diff || "").split("\n").filter((l) => l !== "").map((l) =>
  el("span", { class: l.startsWith("+ ") ? "add" : l.startsWith("- ") ? "del" : "same" }, l + "\n")));

function approvalCard(a) {
  const reason = el("input", { type: "text", class: "reason", placeholder: "reason (optional)", "aria-label": "reason", size: 30 });
  const isDef = a.kind === "definition";
  const decide = (decision) => async (ev) => {
    ev.preventDefault();
    card.querySelectorAll("button").forEach((b) => (b.disabled = true));
    await guarded(async () => {
      const d = await api("POST", "/approvals/" + encodeURIComponent(a.approval_id), { decision, reason: reason.value });
      const r = d.result || {};
      show("notice", `${d.approval.status} ${isDef ? "the new definition of " : ""}${a.tool_name} (${a.approval_id}): ` +
        (isDef ? (d.approval.status === "approved" ? "it is served now" : "the tool stays quarantined (or keeps its pinned definition)")
          : r.success ? "the call succeeded" : "the call failed: " + (r.error || r.status)));
    });
    await loadApprovals();
  };
  const card = isDef ? definitionCard(a) : el("article", { class: "card approval", "data-approval-id": a.approval_id, "data-status": a.status },
    el("h3", null, el("span", { class: "tool" }, a.tool_name), " ", badge(a.status)),
    fields([["client", a.client || "(open service)"], ["plan", a.plan_id], ["sequence", String(a.sequence)],
      ["run", a.run_id ? el("a", { href: "#run/" + encodeURIComponent(a.run_id) }, a.run_id) : null],
      ["tool call", a.tool_call_id], ["created", when(a.created_at)], ["expires", when(a.expires_at)],
      ["decided", a.decided_at ? `${when(a.decided_at)} by ${a.decided_by}${a.reason ? ": " + a.reason : ""}` : null],
      ["sha-256", el("code", null, a.arguments_sha256)]]),
    el("div", { class: "label" }, "arguments"), json(a.arguments));
  if (a.status === "pending") {
    card.append(el("div", { class: "decide" }, reason,
      el("button", { type: "button", class: "approve", onclick: decide("approve") }, isDef ? "Accept new definition" : "Approve"),
      el("button", { type: "button", class: "deny", onclick: decide("deny") }, isDef ? "Reject" : "Deny")));
  }
  return card;
}

// definitionCard shows a changed tool definition awaiting review: the
// server and tool, both digests and the diff of the two definitions.
function definitionCard(a) {
  const d = a.definition || {};
  return el("article", { class: "card approval definition", "data-approval-id": a.approval_id, "data-status": a.status, "data-kind": "definition" },
    el("h3", null, "Definition of ", el("span", { class: "tool" }, a.tool_name), " changed ", badge(a.status)),
    fields([["server", d.server], ["tool on the server", d.tool], ["changed", when(a.created_at)],
      ["decided", a.decided_at ? `${when(a.decided_at)} by ${a.decided_by}${a.reason ? ": " + a.reason : ""}` : null],
      ["pinned sha-256", d.old_sha256 ? el("code", null, d.old_sha256) : "(a new tool)"], ["new sha-256", el("code", null, d.new_sha256)],
      ["on rejection", d.on_change === "keep_old" ? "the pinned definition stays served" : "the tool stays quarantined"]]),
    invisibleWarning(d.invisible_characters),
    el("div", { class: "label" }, "changes (- pinned, + new)"), diffView(d.diff));
}

// invisibleWarning flags a new definition holding invisible characters
// (zero-width, bidi controls, tag characters…), which the diff shows
// escaped (\u200b): a change made of them would otherwise look like none.
const invisibleWarning = (cps) => cps && cps.length
  ? el("p", { class: "warning invisible" }, `Warning: the new definition contains invisible characters (${cps.join(", ")}); ` +
    "the diff shows them escaped (\\u200b).")
  : null;

// APPROVAL_PAGES caps the pages of GET /approvals one refresh reads (of
// its default 100): past it the inbox says it shows only the newest.
const APPROVAL_PAGES = 10;

// listApprovals reads GET /approvals page by page (next_cursor), newest
// first, once each (an approval seen on an earlier page is not repeated),
// up to APPROVAL_PAGES pages; more tells whether older ones were left.
// A full page has a next_cursor even when nothing follows it, so past the
// last page one approval is asked for to tell.
async function listApprovals(status) {
  const seen = new Map();
  const get = (cursor, limit) => api("GET", "/approvals?status=" + encodeURIComponent(status) +
    (cursor ? "&cursor=" + encodeURIComponent(cursor) : "") + (limit ? "&limit=" + limit : ""));
  let cursor = null;
  for (let page = 0; page < APPROVAL_PAGES; page++) {
    const { approvals, next_cursor } = await get(cursor);
    for (const a of approvals) if (!seen.has(a.approval_id)) seen.set(a.approval_id, a);
    if (!next_cursor) return { approvals: [...seen.values()], more: false };
    cursor = next_cursor;
  }
  const { approvals: older } = await get(cursor, 1);
  return { approvals: [...seen.values()], more: older.length > 0 };
}

// loadApprovals refreshes the list in place: cards already shown stay (a
// reason being typed survives the refresh), new ones are inserted in order.
// Loads run one after the other, so a refresh never races another.
let approvalsQueue = Promise.resolve();
function loadApprovals() {
  return (approvalsQueue = approvalsQueue.then(() => guarded(async () => {
    const status = $("ap-status").value;
    const { approvals, more } = await listApprovals(status);
    const list = $("ap-list");
    const keep = new Set(approvals.map((a) => a.approval_id + "/" + a.status));
    const shown = new Map();
    for (const c of [...list.children]) {
      if (!keep.has(c.dataset.approvalId + "/" + c.dataset.status)) c.remove();
      else shown.set(c.dataset.approvalId, c);
    }
    let prev = null;
    for (const a of approvals) {
      let card = shown.get(a.approval_id);
      if (!card) card = approvalCard(a);
      if ((prev ? prev.nextSibling : list.firstChild) !== card) list.insertBefore(card, prev ? prev.nextSibling : list.firstChild);
      prev = card;
    }
    if (!approvals.length) list.replaceChildren(el("p", { class: "empty" }, `No ${status} approvals.`));
    show("ap-more", more ? `Showing the newest ${approvals.length} ${status} approvals; decide some to see older ones.` : "");
    $("ap-updated").textContent = "updated " + new Date().toLocaleTimeString();
  })));
}

// --- runs

// listRuns lists a plan's runs, or without one the 50 most recent runs the
// key may see.
async function listRuns(plan) {
  await guarded(async () => {
    const { runs } = await api("GET", plan ? "/runs?plan_id=" + encodeURIComponent(plan) : "/runs?limit=50");
    $("runs-list").replaceChildren(runs.length ? el("table", { class: "runs" },
      el("thead", null, el("tr", null, ["run", "status", "created", "turns", "model", "prompt"].map((h) => el("th", null, h)))),
      el("tbody", null, runs.map((r) => el("tr", null,
        el("td", null, el("a", { href: "#run/" + encodeURIComponent(r.run_id) }, r.run_id)), el("td", null, badge(r.status)),
        el("td", null, when(r.created_at)), el("td", null, String(r.iterations)), el("td", null, `${r.provider}/${r.model}`),
        el("td", { class: "prompt" }, (r.prompt || "").slice(0, 80))))))
      : el("p", { class: "empty" }, plan ? `No runs in plan ${plan}.` : "No runs yet."));
  });
}

function toolStep(tc, approvals) {
  const waiting = tc.status === "awaiting_approval";
  const outcome = waiting ? "awaiting approval" : tc.success ? "success" : `${tc.error_category || "error"}: ${tc.error || ""}`;
  const a = tc.approval_id && approvals[tc.approval_id];
  return el("li", { class: "step call " + (waiting ? "wait" : tc.success ? "ok" : "fail"), "data-step": "tool" },
    el("div", { class: "what" }, "Tool call ", el("span", { class: "tool" }, tc.tool_name),
      waiting ? "" : el("span", { class: "dur" }, ` ${Math.round(tc.duration_ms * 10) / 10} ms`), " — ", outcome),
    tc.approval_id ? el("div", { class: "approval-note", "data-step": "approval" }, "approval ", tc.approval_id, ": ",
      a ? (a.status === "pending" ? "pending" : `${a.status}${a.decided_by ? " by " + a.decided_by : ""}${a.reason ? " (" + a.reason + ")" : ""}`) : "—") : null,
    el("details", null, el("summary", null, "inputs and output"), json(tc.inputs), json(tc.output)));
}

let openRun = null; // the run whose timeline is shown, refreshed while it is not finished

async function loadRun(id) {
  openRun = id;
  await guarded(async () => {
    const run = await api("GET", "/runs/" + encodeURIComponent(id));
    const approvals = {};
    await Promise.all(run.tool_calls.filter((tc) => tc.approval_id).map(async (tc) => {
      approvals[tc.approval_id] = await api("GET", "/approvals/" + encodeURIComponent(tc.approval_id)).catch(() => null);
    }));
    const turns = Math.max(run.iterations, ...run.tool_calls.map((tc) => tc.iteration));
    const steps = [el("li", { class: "step prompt", "data-step": "prompt" }, el("div", { class: "what" }, "Prompt"), el("pre", null, run.prompt || ""))];
    for (let i = 1; i <= turns; i++) {
      const calls = run.tool_calls.filter((tc) => tc.iteration === i);
      steps.push(el("li", { class: "step turn", "data-step": "model-turn" }, el("div", { class: "what" }, `Model turn ${i}`,
        calls.length ? ` — asked for ${calls.length} tool call${calls.length > 1 ? "s" : ""}` : " — answered")));
      for (const tc of calls) steps.push(toolStep(tc, approvals));
    }
    const done = run.status !== "running" && run.status !== "awaiting_approval";
    steps.push(el("li", { class: "step final " + run.status, "data-step": "final" }, el("div", { class: "what" }, done ? "Finished: " : "Now: ", badge(run.status),
      run.terminated_reason ? ` (${run.terminated_reason})` : "", run.finished_at ? " at " + when(run.finished_at) : ""),
      run.error ? el("p", { class: "error" }, run.error) : null, run.content ? el("pre", { class: "content" }, run.content) : null,
      (run.pending_approvals || []).length ? el("p", null, "waiting for ", el("a", { href: "#approvals" }, `${run.pending_approvals.length} approval(s)`)) : null));
    $("timeline").replaceChildren(el("article", { class: "card run", "data-run-id": run.run_id, "data-status": run.status },
      el("h3", null, "Run ", el("code", null, run.run_id), " ", badge(run.status)),
      fields([["plan", run.context && run.context.plan_id], ["model", `${run.provider}/${run.model}`], ["created", when(run.created_at)],
        ["tokens", run.usage ? String(run.usage.total_tokens) : null]]),
      el("ol", { class: "timeline" }, steps)));
  });
}

// --- tools

async function loadTools() {
  await guarded(async () => {
    const provider = $("provider").value;
    const { tools } = await api("GET", "/schemas/" + encodeURIComponent(provider));
    $("tools-list").replaceChildren(...(tools.length ? tools.map((t) => el("article", { class: "card tool-def", "data-tool": t.name },
      el("h3", null, el("span", { class: "tool" }, t.name), " ", el("span", { class: "badge" }, t.tool_type),
        t.exported_name && t.exported_name !== t.name ? el("span", { class: "hint" }, ` exported as ${t.exported_name}`) : null,
        t.validation_mode ? el("span", { class: "hint" }, ` mode ${t.validation_mode}`) : null),
      json(t.definition))) : [el("p", { class: "empty" }, "No tools.")]));
  });
}

// --- usage (docs/costs.md "Reports")

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs, ...children) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}
const money = (amount, currency) => (currency ? `${Number(amount).toFixed(Number(amount) < 1 ? 4 : 2)} ${currency}` : "unpriced");
const isoDay = (d) => d.toISOString().slice(0, 10);

// usageRows reads every page of GET /usage for one grouping.
async function usageRows(groupBy, from, to) {
  const rows = [];
  let cursor = "";
  for (let i = 0; i < 50; i++) {
    const q = new URLSearchParams({ group_by: groupBy, from: from + "T00:00:00Z", to: to + "T00:00:00Z", limit: "1000" });
    if (cursor) q.set("cursor", cursor);
    const page = await api("GET", "/usage?" + q);
    rows.push(...page.rows);
    if (!page.next_cursor) break;
    cursor = page.next_cursor;
  }
  return rows;
}

// usageTable is one grouping's rows, one line per key: what it spent (in
// each currency), its calls and its unpriced calls.
function usageTable(all, what) {
  if (!all.length) return el("p", { class: "empty" }, "Nothing spent.");
  const byKey = new Map();
  for (const r of all) {
    const g = byKey.get(r.key) || { key: r.key, spent: [], calls: 0, unpriced_calls: 0 };
    if (r.currency) g.spent.push(money(r.amount, r.currency));
    g.calls += r.calls;
    g.unpriced_calls += r.unpriced_calls;
    byKey.set(r.key, g);
  }
  const rows = [...byKey.values()].map((g) => ({ ...g, currency: g.spent.length > 0, amount: g.spent.join(" + ") }));
  return el("table", { class: "runs usage", "data-usage": what },
    el("thead", null, el("tr", null, el("th", null, what), el("th", { class: "num" }, "spent"), el("th", { class: "num" }, "calls"), el("th", { class: "num" }, "unpriced"))),
    el("tbody", null, rows.map((r) => el("tr", null, el("td", { class: "tool" }, r.key || "—"),
      el("td", { class: "num" }, r.currency ? r.amount : "—"), el("td", { class: "num" }, String(r.calls)),
      el("td", { class: "num" }, String(r.unpriced_calls))))));
}

// dayChart draws the spend per day of one currency as bars, each labelled.
function dayChart(rows, from, to, currency) {
  const days = [];
  for (let d = new Date(from + "T00:00:00Z"); isoDay(d) < to; d.setUTCDate(d.getUTCDate() + 1)) days.push(isoDay(d));
  const byDay = Object.fromEntries(rows.filter((r) => r.currency === currency).map((r) => [r.key, Number(r.amount)]));
  const max = Math.max(...days.map((d) => byDay[d] || 0), 0) || 1;
  const W = 960, H = 260, left = 70, bottom = 40, top = 24, plotH = H - top - bottom;
  const step = (W - left - 10) / Math.max(days.length, 1), barW = Math.max(Math.min(step * 0.7, 48), 2);
  const parts = [svg("text", { x: 8, y: 16, class: "axis" }, `Spend per day (${currency}, UTC)`)];
  for (let i = 0; i <= 4; i++) {
    const y = top + plotH - (plotH * i) / 4;
    parts.push(svg("line", { x1: left, x2: W - 10, y1: y, y2: y, class: "grid" }),
      svg("text", { x: left - 6, y: y + 4, "text-anchor": "end", class: "axis" }, ((max * i) / 4).toFixed(max < 1 ? 4 : 2)));
  }
  const every = Math.ceil(days.length / 16);
  days.forEach((d, i) => {
    const v = byDay[d] || 0, h = (plotH * v) / max, x = left + i * step + (step - barW) / 2;
    parts.push(svg("rect", { x, y: top + plotH - h, width: barW, height: Math.max(h, v > 0 ? 1 : 0), class: "bar", "data-day": d }, svg("title", null, `${d}: ${money(v, currency)}`)));
    if (v > 0) parts.push(svg("text", { x: x + barW / 2, y: top + plotH - h - 4, "text-anchor": "middle", class: "value" }, v.toFixed(v < 1 ? 4 : 2)));
    if (i % every === 0) parts.push(svg("text", { x: x + barW / 2, y: H - bottom + 16, "text-anchor": "middle", class: "axis" }, d.slice(5)));
  });
  return svg("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", role: "img", "aria-label": `spend per day in ${currency}` }, ...parts);
}

async function loadUsage() {
  await guarded(async () => {
    if (!$("usage-from").value) {
      const now = new Date();
      $("usage-from").value = isoDay(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)));
      $("usage-to").value = isoDay(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)));
    }
    const from = $("usage-from").value, to = $("usage-to").value;
    const [days, clients, tools] = await Promise.all(["day", "client", "tool"].map((g) => usageRows(g, from, to)));
    const totals = {};
    let unpriced = 0;
    for (const r of clients) {
      if (r.currency) totals[r.currency] = (totals[r.currency] || 0) + Number(r.amount);
      unpriced += r.unpriced_calls;
    }
    const currencies = Object.keys(totals).sort();
    const main = currencies.includes("USD") ? "USD" : currencies[0] || "USD";
    $("usage-total").replaceChildren(el("p", { class: "total" }, "Spent ", el("strong", { "data-total": main }, currencies.length ? currencies.map((c) => money(totals[c], c)).join(" + ") : "nothing"),
      ` from ${from} to ${to}`, unpriced ? `, and ${unpriced} unpriced call${unpriced > 1 ? "s" : ""}` : ""));
    $("usage-chart").replaceChildren(dayChart(days, from, to, main));
    $("usage-clients").replaceChildren(usageTable(clients, "client"));
    $("usage-tools").replaceChildren(usageTable(tools, "tool"));
  });
}

// --- navigation: #approvals, #runs, #run/ID, #tools, #usage

function route() {
  const signedIn = sessionStorage.getItem(KEY) !== null;
  $("signin").hidden = signedIn;
  $("nav").hidden = $("signout").hidden = !signedIn;
  const [view, arg] = (location.hash.slice(1) || "approvals").split("/");
  const name = view === "run" ? "runs" : view;
  for (const s of document.querySelectorAll("section.view")) s.hidden = !signedIn || s.id !== name;
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("current", a.dataset.view === name);
  if (!signedIn) return;
  if (name === "approvals") loadApprovals();
  if (name === "tools") loadTools();
  if (name === "usage") loadUsage();
  if (name === "runs") listRuns($("plan").value.trim());
  if (view === "run" && arg) {
    $("run-id").value = decodeURIComponent(arg);
    loadRun(decodeURIComponent(arg));
  }
}

function signOut() {
  sessionStorage.removeItem(KEY);
  openRun = null;
  for (const id of ["ap-list", "runs-list", "timeline", "tools-list", "usage-total", "usage-chart", "usage-clients", "usage-tools"]) $(id).replaceChildren();
  show("notice", "");
  route();
}

document.addEventListener("DOMContentLoaded", () => {
  $("signin-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(KEY, $("key").value.trim());
    $("key").value = "";
    route();
  });
  $("signout").addEventListener("click", signOut);
  $("ap-status").addEventListener("change", () => { $("ap-list").replaceChildren(); loadApprovals(); });
  $("provider").addEventListener("change", loadTools);
  $("usage-form").addEventListener("submit", (ev) => { ev.preventDefault(); loadUsage(); });
  $("plan-form").addEventListener("submit", (ev) => { ev.preventDefault(); listRuns($("plan").value.trim()); });
  $("run-form").addEventListener("submit", (ev) => { ev.preventDefault(); location.hash = "#run/" + encodeURIComponent($("run-id").value.trim()); });
  window.addEventListener("hashchange", route);
  setInterval(() => {
    if (document.hidden || sessionStorage.getItem(KEY) === null) return;
    if (!$("approvals").hidden) loadApprovals();
    const card = document.querySelector("#timeline .run");
    if (!$("runs").hidden && openRun && card && ["running", "awaiting_approval"].includes(card.dataset.status)) loadRun(openRun);
  }, REFRESH_MS);
  route();
});
