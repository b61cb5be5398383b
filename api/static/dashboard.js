// tilejudge operations dashboard: polls /v1/stats (the HttpOnly admin cookie goes along) and
// redraws. Everything is built with textContent: event fields come from uploads and teams.
// Each game's words come with the stats (`games`): the script names no game.
"use strict";

const POLL_MS = 1000; // the server refreshes at most once a second, however many pages poll
const COLOURS = { depth: "#f59e0b", uploads: "#60a5fa", judged: "#34d399", rejudged: "#a78bfa" };
let last = null;
let lastOkAt = 0;

const $ = (id) => document.getElementById(id);
const fmtInt = (n) => (n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"));

function setText(id, value) {
  const el = $(id);
  if (el.textContent !== String(value)) el.textContent = value;
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

function latencyParts(ms) {
  if (ms === null || ms === undefined) return ["–", ""];
  if (ms < 1000) return [String(Math.round(ms)), "ms"];
  if (ms < 60000) return [(ms / 1000).toFixed(ms < 10000 ? 2 : 1), "s"];
  return [(ms / 60000).toFixed(1), "min"];
}

function fmtLatency(ms) {
  const [value, unit] = latencyParts(ms);
  return unit ? `${value} ${unit}` : value;
}

function fmtDuration(seconds) {
  const s = Math.max(0, Math.round(Math.abs(seconds)));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, "0")} s`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")} min`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

function emptyNode(tag, text, colspan) {
  if (tag !== "tr") return el(tag, "empty", text);
  const row = el("tr");
  const cell = el("td", "empty", text);
  cell.colSpan = colspan;
  row.appendChild(cell);
  return row;
}

function replaceChildren(parent, children, emptyTag, emptyText, colspan) {
  parent.replaceChildren(...(children.length ? children : [emptyNode(emptyTag, emptyText, colspan)]));
}

// --- the pieces of the page --------------------------------------------------------------

function renderStatus(s) {
  const pill = $("status");
  pill.dataset.colour = s.status.colour;
  setText("status-label", s.status.label);
  setText("status-reasons", s.status.reasons.join(" · "));
  $("status-reasons").title = s.status.reasons.join("\n");
  document.body.dataset.colour = s.status.colour;
  const areas = s.status.areas;
  $("kpi-queue").dataset.colour = s.queues.status === "ok" ? areas.queue : "unknown";
  $("kpi-workers").dataset.colour = areas.workers;
  $("kpi-failures").dataset.colour = areas.failures;
}

function renderFigures(s) {
  const q = s.queues;
  if (q.status === "ok") {
    setText("queue-total", fmtInt(q.total));
    setText("queue-detail", `live ${fmtInt(q.live.depth)} · bulk ${fmtInt(q.bulk.depth)} · unacked ${fmtInt(q.unacked)}`);
  } else {
    setText("queue-total", "n/a");
    setText("queue-detail", `unavailable: ${q.detail || "no broker"}`);
  }
  const w = s.workers;
  if (w.online === null) {
    setText("workers-online", "n/a");
    setText("workers-detail", w.status === "starting" ? "listening for heartbeats…" : `unavailable: ${w.detail || ""}`);
  } else {
    setText("workers-online", fmtInt(w.online));
    const slots = w.slots_known ? fmtInt(w.slots) : "? (asking)";
    setText("workers-detail", `${slots} processes · ${fmtInt(w.active)} ${w.active === 1 ? "task" : "tasks"} running`);
  }
  const t = s.totals;
  setText("uploads-rate", fmtInt(s.uploads_per_minute));
  setText("uploads-total", fmtInt(t.uploads));
  setText("judged-rate", fmtInt(s.judged_per_minute));
  setText("rejudged-rate", fmtInt(s.rejudged_per_minute));
  $("rejudged").dataset.idle = String(!s.rejudged_per_minute);
  setText("judged-total", fmtInt(t.judged));
  setText("backlog", fmtInt(t.backlog));
  const lat = s.latency_ms;
  const [p50, unit] = latencyParts(lat.p50);
  setText("latency-p50", p50);
  setText("latency-p50-unit", unit);
  setText("latency-p95", fmtLatency(lat.p95));
  setText("latency-p99", fmtLatency(lat.p99));
  $("kpi-latency").title = `${fmtInt(lat.count)} results in the last ${Math.round(lat.window_s / 60)} min`;
  setText("failures-recent", fmtInt(s.failures.last_5_min));
  setText("failures-total", fmtInt(s.failures.total));
}

function renderContests(s) {
  const rows = s.contests.map((c) => {
    const tr = el("tr");
    const name = el("td", "contest");
    const head = el("div", "contest-head");
    head.appendChild(el("span", "contest-id", c.id));
    head.appendChild(el("span", `phase ${c.phase}`, c.phase));
    head.appendChild(el("span", `game ${c.game}`, c.game));
    name.appendChild(head);
    name.appendChild(el("span", "title", c.title));
    name.title = `${c.title} (${c.game})`;
    const board = el("a", "board", "leaderboard");
    board.href = c.leaderboard_page_url;
    board.title = `${c.title}: ${s.games[c.game].leaderboard}`;
    name.appendChild(board);
    tr.appendChild(name);
    const counts = c.counts;
    tr.appendChild(el("td", "num", fmtInt(counts.stored + counts.queued)));
    tr.appendChild(el("td", "num", fmtInt(counts.judging)));
    tr.appendChild(el("td", "num", fmtInt(counts.judged)));
    tr.appendChild(el("td", counts.failed ? "num bad" : "num", fmtInt(counts.failed)));
    // Two pieces that each stay whole, so a narrow column breaks the line between them.
    let deadline;
    if (c.phase === "upcoming") deadline = ["opens in", fmtDuration(c.opens_in_s)];
    else if (c.phase === "open") deadline = ["in", fmtDuration(c.closes_in_s)];
    else deadline = ["closed", `${fmtDuration(c.closes_in_s)} ago`];
    const soon = c.phase === "open" && c.closes_in_s < 600;
    const cell = el("td", soon ? "num deadline warn" : "num deadline");
    cell.append(el("span", "", deadline[0]), " ", el("span", "", deadline[1]));
    cell.title = `closes_at ${c.closes_at}`;
    tr.appendChild(cell);
    return tr;
  });
  replaceChildren($("contests").tBodies[0], rows, "tr", "no contests yet", 6);
}

function rulesetName(part) {
  return part.name || part.id.slice(0, 12);
}

function rulesetChange(r, kind, label) {
  const from = rulesetName(r.from[kind]);
  const to = rulesetName(r.to[kind]);
  return r.from[kind].id === r.to[kind].id ? `${label} ${to} (unchanged)` : `${label} ${from} → ${to}`;
}

// Every name a run's word lists carry, for its tooltip: the line shows the one given last
// before the run started.
function rulesetNames(r) {
  const parts = [];
  for (const [side, part] of [["from", r.from.lexicon], ["to", r.to.lexicon]]) {
    if (side === "to" && part.id === r.from.lexicon.id) continue;
    parts.push(`word list ${part.id.slice(0, 12)}: ${(part.names || []).join(", ") || "no name"}`);
  }
  return parts.join("\n");
}

// What a run's preview counts (its `scores` and its `ranks`), in its game's words: each as
// one and as many (`games` of /v1/stats).
function changesText(r, words) {
  const [first, second] = [words.scores, words.ranks];
  if (r.changes === null) {
    return r.state === "running" ? `${first[1]} and ${second[1]} that change: once every submission is judged` : "";
  }
  const scores = `${fmtInt(r.changes.scores)} ${r.changes.scores === 1 ? first[0] : first[1]}`;
  const ranks = `${fmtInt(r.changes.ranks)} ${r.changes.ranks === 1 ? second[0] : second[1]}`;
  return `${scores} and ${ranks} ${r.state === "applied" ? "changed" : "would change"}`;
}

function renderRejudges(s) {
  const runs = s.rejudges.map((r) => {
    const box = el("div", "run");
    box.dataset.run = r.id;
    box.dataset.state = r.state;
    const head = el("div", "run-head");
    head.appendChild(el("span", "", `${r.contest} · ${r.game} · run ${r.id.slice(0, 8)} · ${r.mode}`));
    head.appendChild(el("span", `run-state ${r.state}`, r.state));
    box.appendChild(head);
    const words = s.games[r.game];
    const rules = el("div", "run-rules", `${rulesetChange(r, "lexicon", "word list")} · ${rulesetChange(r, "layout", words.rules_noun)}`);
    rules.dataset.field = "rules";
    rules.title = rulesetNames(r);
    box.appendChild(rules);
    const bar = el("div", r.total > 0 && r.done >= r.total ? "bar done" : "bar");
    bar.setAttribute("role", "progressbar");
    bar.setAttribute("aria-valuemin", "0");
    bar.setAttribute("aria-valuemax", String(r.total));
    bar.setAttribute("aria-valuenow", String(r.done));
    const fill = el("div");
    const share = r.total > 0 ? Math.min(1, r.done / r.total) : 1;
    fill.style.width = `${(share * 100).toFixed(1)}%`;
    bar.appendChild(fill);
    box.appendChild(bar);
    let figures = `${fmtInt(r.done)} / ${fmtInt(r.total)} submissions (${(share * 100).toFixed(1)} %)`;
    if (r.state === "running") {
      figures += ` · ${r.rate_per_s.toFixed(1)} /s · ETA ${r.eta_s === null ? "–" : fmtDuration(r.eta_s)}`;
    }
    box.appendChild(el("div", "run-figures", figures));
    const changes = el("div", "run-changes");
    changes.dataset.field = "changes";
    const counted = changesText(r, words);
    if (counted) changes.appendChild(el("span", r.changes && r.changes.scores ? "warn" : "", counted));
    const preview = el("a", "preview", r.state === "applied" ? "what changed" : "preview");
    preview.href = r.preview_page_url;
    preview.title = words.preview;
    changes.appendChild(preview);
    box.appendChild(changes);
    return box;
  });
  replaceChildren($("rejudges"), runs, "p", "no open rejudge runs");
}

function renderWorkers(s) {
  const rows = s.workers.list.map((w) => {
    const tr = el("tr");
    const name = el("td", "name", w.hostname);
    name.title = w.hostname;
    if (!w.online) name.appendChild(el("span", "offline", "offline: no heartbeat"));
    tr.appendChild(name);
    tr.appendChild(el("td", "num", w.concurrency === null ? "?" : fmtInt(w.concurrency)));
    tr.appendChild(el("td", "num", fmtInt(w.active)));
    tr.appendChild(el("td", "num", fmtInt(w.processed)));
    tr.appendChild(el("td", w.online ? "num" : "num bad", `${w.last_heartbeat_s.toFixed(1)} s`));
    return tr;
  });
  const empty = s.workers.online === null ? `heartbeats ${s.workers.status}` : "no worker online";
  replaceChildren($("workers").tBodies[0], rows, "tr", empty, 5);
  const sizes = s.task_sizes;
  setText("task-sizes", `up to ${sizes.uploads_per_message} uploads, or a rejudge batch of up to `
    + `${sizes.submissions_per_rejudge_batch} submissions`);
}

function renderFailures(s) {
  const reasons = s.failures.by_reason.map((r) => {
    const li = el("li");
    li.appendChild(el("span", "", r.reason));
    li.appendChild(el("span", "count bad", fmtInt(r.count)));
    return li;
  });
  replaceChildren($("failure-reasons"), reasons, "li", "no failures");
  const recent = s.failures.recent.map((f) => {
    const li = el("li", "", `${f.at.slice(11, 19)} · ${f.contest} · ${f.submission.slice(0, 8)} · ${f.reason}`);
    li.title = f.detail;
    return li;
  });
  replaceChildren($("failure-recent"), recent, "li", "none");
}

// --- polling -----------------------------------------------------------------------------

function render(s) {
  renderStatus(s);
  renderFigures(s);
  renderCharts(s);
  renderContests(s);
  renderRejudges(s);
  renderWorkers(s);
  renderServices(s);
  renderFailures(s);
  renderEvents(s);
  $("updated").title = `server time ${s.generated_at} · computed in ${s.compute_ms} ms`;
}

function showBanner(text) {
  const banner = $("banner");
  banner.textContent = text;
  banner.hidden = !text;
}

function tickAge() {
  if (!lastOkAt) return;
  const age = (Date.now() - lastOkAt) / 1000;
  setText("updated", `updated ${age < 1.5 ? "just now" : `${age.toFixed(0)} s ago`}`);
}

async function poll() {
  try {
    const response = await fetch("/v1/stats", { credentials: "same-origin", cache: "no-store" });
    if (response.status === 401 || response.status === 403) {
      window.location.assign("/dashboard"); // signed out or the token changed: the form again
      return;
    }
    if (!response.ok) {
      showBanner(`Stats unavailable (HTTP ${response.status}); retrying every ${POLL_MS / 1000} s`);
    } else {
      last = await response.json();
      lastOkAt = Date.now();
      showBanner("");
      render(last);
    }
  } catch (error) {
    showBanner(`The API does not answer (${error.message}); retrying every ${POLL_MS / 1000} s`);
  }
  tickAge();
  window.setTimeout(poll, POLL_MS);
}

window.addEventListener("resize", () => { if (last) renderCharts(last); });
window.setInterval(tickAge, 500);
poll();
