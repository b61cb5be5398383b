// tilejudge operations dashboard, its second half: the services' panel (database and Redis,
// primaries and lag), the event feed and the charts. Loaded before dashboard.js, whose
// helpers (el, $, fmtInt, COLOURS) these functions use when called; dashboard.js polls.
"use strict";

function fmtBytes(n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "kB", "MB", "GB", "TB"];
  let value = Number(n);
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return unit ? `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}` : `${value} B`;
}

function fmtLag(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  return seconds < 10 ? `${Number(seconds).toFixed(2)} s` : fmtDuration(seconds);
}

// A lag cell: time and bytes, each whole, wrapped between them in a narrow column.
function lagCell(seconds, bytes, title) {
  const cell = el("td", "num lag");
  cell.append(el("span", "", fmtLag(seconds)), " · ", el("span", "", fmtBytes(bytes)));
  cell.title = title;
  return cell;
}

function primaryLine(id, text, role, roleClass, title) {
  const line = $(id);
  line.replaceChildren(el("span", "", text));
  if (role) line.appendChild(el("span", `role ${roleClass}`, role));
  line.title = title || "";
}

function renderDatabase(db) {
  const body = $("database-standbys").tBodies[0];
  if (!db) {
    primaryLine("database-primary", "–");
    replaceChildren(body, [], "tr", "–", 4);
    return;
  }
  if (!db.replicated) {
    primaryLine("database-primary", `${db.dialect === "sqlite" ? "SQLite" : db.dialect}`, "no replication", "");
    replaceChildren(body, [], "tr", "one database file, no standbys", 4);
    return;
  }
  if (db.problem) {
    primaryLine("database-primary", "no primary answers", db.problem, "bad");
  } else {
    const facts = [db.address];
    if (db.timeline !== null) facts.push(`timeline ${db.timeline}`);
    facts.push(`${fmtInt(db.standbys.length)} standby${db.standbys.length === 1 ? "" : "s"}, ${fmtInt(db.sync_standbys)} synchronous`);
    const role = db.primary ? "takes writes" : db.in_recovery ? "a standby: no writes" : "read-only";
    primaryLine("database-primary", facts.join(" · "), role, db.primary ? "good" : "bad",
      db.system_identifier ? `system identifier ${db.system_identifier}` : "");
  }
  const rows = db.standbys.map((standby) => {
    const tr = el("tr");
    const name = el("td", "name", standby.name || "(unnamed)");
    name.title = [standby.name, standby.address].filter(Boolean).join(" · ");
    tr.appendChild(name);
    tr.appendChild(el("td", standby.state === "streaming" ? "state" : "state warn", standby.state || "?"));
    tr.appendChild(el("td", standby.sync_state === "sync" || standby.sync_state === "quorum" ? "state good" : "state", standby.sync_state || "?"));
    tr.appendChild(lagCell(standby.lag_seconds, standby.lag_bytes, "replay lag · WAL not yet replayed ('?' needs pg_monitor)"));
    return tr;
  });
  replaceChildren(body, rows, "tr", db.problem ? "unknown while no primary answers" : "no standby streams from it", 4);
}

function renderRedis(r) {
  const body = $("redis-replicas").tBodies[0];
  const sentinels = $("redis-sentinels");
  if (!r) {
    primaryLine("redis-primary", "no Redis configured");
    sentinels.hidden = true;
    replaceChildren(body, [], "tr", "–", 3);
    return;
  }
  if (r.problem) {
    primaryLine("redis-primary", "no primary answers", r.problem, "bad");
  } else if (r.primary) {
    primaryLine("redis-primary", `${r.address} · ${fmtInt(r.replicas.length)} replica${r.replicas.length === 1 ? "" : "s"}`, "primary", "good");
  } else {
    primaryLine("redis-primary", `${r.address || "?"} · replica of ${r.replica_of || "?"}`, "no writes", "bad");
  }
  if (r.sentinels) {
    const v = r.sentinels;
    sentinels.textContent = `Sentinels: ${v.answered} of ${v.asked} answer, naming ${v.primary || "no primary"}`;
    sentinels.hidden = false;
  } else {
    sentinels.hidden = true;
  }
  const rows = r.replicas.map((replica) => {
    const tr = el("tr");
    const name = el("td", "name", replica.address);
    name.title = `${replica.address} · offset ${fmtInt(replica.offset)}`;
    tr.appendChild(name);
    tr.appendChild(el("td", replica.state === "online" ? "state" : "state warn", replica.state || "?"));
    tr.appendChild(lagCell(replica.lag_seconds, replica.lag_bytes, "since its last acknowledgement · bytes behind the primary"));
    return tr;
  });
  replaceChildren(body, rows, "tr", r.problem ? "unknown while no primary answers" : "no replica connected", 3);
}

function renderServices(s) {
  const services = s.services;
  if (!services) return;
  renderDatabase(services.database);
  renderRedis(services.redis);
  const failovers = services.failovers.map((f) => {
    const li = el("li", "", `${f.at.slice(11, 19)} · ${f.service} · ${f.old} → ${f.new}`);
    li.title = f.at;
    return li;
  });
  replaceChildren($("failovers"), failovers, "li", "none seen by this API process");
}

function eventSummary(e) {
  const parts = [];
  if (e.contest) parts.push(e.contest);
  if (e.submission) parts.push(`sub ${String(e.submission).slice(0, 8)}`);
  else if (e.team) parts.push(`team ${String(e.team).slice(0, 8)}`);
  if (e.name) parts.push(String(e.name));
  if (e.submissions_deleted !== undefined) parts.push(`${fmtInt(e.submissions_deleted)} submissions deleted`);
  if (e.rejudge) parts.push(`run ${String(e.rejudge).slice(0, 8)}`);
  if (e.mode) parts.push(String(e.mode));
  if (e.done !== undefined && e.total !== undefined) parts.push(`${fmtInt(e.done)} / ${fmtInt(e.total)} done`);
  else if (e.total !== undefined) parts.push(`${fmtInt(e.total)} to judge`);
  if (e.score !== undefined) parts.push(`score ${fmtInt(e.score)}`);
  if (e.attempt !== undefined) parts.push(`attempt ${e.attempt}`);
  if (e.reason) parts.push(String(e.reason));
  return parts.join(" · ");
}

function renderEvents(s) {
  const items = s.events.map((e) => {
    const li = el("li");
    li.appendChild(el("span", "ts", String(e.ts).slice(11, 19)));
    const kind = String(e.type);
    li.appendChild(el("span", `type ${kind.split(".").pop()}`, kind));
    const what = eventSummary(e);
    const cell = el("span", "what", what);
    cell.title = what;
    li.appendChild(cell);
    return li;
  });
  replaceChildren($("events"), items, "li", "no events yet");
}

// --- charts ------------------------------------------------------------------------------

function axis(max) {
  // whole-number gridlines (counts are whole), about four of them, on a 1-2-5 step
  const raw = Math.max(max, 1) / 4;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = Math.max(1, [1, 2, 5, 10].map((m) => m * power).find((v) => v >= raw));
  return { step, top: step * Math.max(2, Math.ceil(max / step)) };
}

function drawChart(canvas, series, emptyText) {
  const ratio = window.devicePixelRatio || 1;
  const width = canvas.clientWidth;
  const height = canvas.clientHeight;
  if (!width || !height) return;
  if (canvas.width !== Math.round(width * ratio) || canvas.height !== Math.round(height * ratio)) {
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
  }
  const ctx = canvas.getContext("2d");
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, width, height);
  const pad = { left: 44, right: 10, top: 8, bottom: 22 };
  const plotW = width - pad.left - pad.right;
  const plotH = height - pad.top - pad.bottom;
  const values = series.flatMap((s) => s.values.filter((v) => v !== null));
  const { step, top } = axis(Math.max(0, ...values));
  const n = series[0].values.length;
  const x = (i) => pad.left + (plotW * i) / (n - 1);
  const y = (v) => pad.top + plotH - (plotH * v) / top;

  ctx.font = "11px system-ui, sans-serif";
  ctx.strokeStyle = "#334155";
  ctx.fillStyle = "#94a3b8";
  ctx.lineWidth = 1;
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (let v = 0; v <= top; v += step) {
    const yy = Math.round(y(v)) + 0.5;
    ctx.beginPath();
    ctx.moveTo(pad.left, yy);
    ctx.lineTo(width - pad.right, yy);
    ctx.stroke();
    ctx.fillText(v.toLocaleString("en-US"), pad.left - 6, yy);
  }
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  for (const minutesAgo of [60, 45, 30, 15, 0]) {
    const i = n - 1 - Math.min(n - 1, minutesAgo);
    ctx.fillText(minutesAgo === 0 ? "now" : `−${minutesAgo} min`, x(i), height - pad.bottom + 6);
  }
  for (const s of series.filter((one) => one.fill)) {
    // translucent bars under the lines, so a line equal to them stays visible
    ctx.fillStyle = s.fill;
    s.values.forEach((v, i) => {
      if (v === null) return;
      const w = plotW / (n - 1);
      ctx.fillRect(x(i) - w / 2, y(v), w, y(0) - y(v));
    });
  }
  for (const s of series.filter((one) => !one.fill)) {
    ctx.strokeStyle = s.colour;
    ctx.lineWidth = 2;
    ctx.lineJoin = "round";
    ctx.beginPath();
    let drawing = false;
    s.values.forEach((v, i) => {
      if (v === null) {
        drawing = false;
        return;
      }
      if (drawing) ctx.lineTo(x(i), y(v));
      else ctx.moveTo(x(i), y(v));
      drawing = true;
    });
    ctx.stroke();
    // a lone point (one minute of samples between gaps) would not show as a line
    s.values.forEach((v, i) => {
      const alone = v !== null && (i === 0 || s.values[i - 1] === null) && (i === n - 1 || s.values[i + 1] === null);
      if (alone) {
        ctx.fillStyle = s.colour;
        ctx.beginPath();
        ctx.arc(x(i), y(v), 2.5, 0, 2 * Math.PI);
        ctx.fill();
      }
    });
  }
  if (!values.length && emptyText) {
    ctx.fillStyle = "#94a3b8";
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    ctx.fillText(emptyText, pad.left + plotW / 2, pad.top + plotH / 2);
  }
}

function renderCharts(s) {
  drawChart($("chart-depth"), [{ values: s.series.queue_depth, colour: COLOURS.depth }],
    s.queues.status === "ok" ? "sampled while a dashboard is open" : "broker unavailable");
  drawChart($("chart-throughput"), [
    { values: s.series.uploads, colour: COLOURS.uploads, fill: "rgba(96, 165, 250, 0.45)" },
    { values: s.series.judged, colour: COLOURS.judged },
    { values: s.series.rejudged, colour: COLOURS.rejudged },
  ]);
}
