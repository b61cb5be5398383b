// The team page: uploads the chosen or dropped file with a progress bar, refusing one over the
// limit before sending it, shows the receipt or the server's one-sentence error, and keeps the
// list of the team's submissions current by asking for it every 2 s (one request at a time),
// while the page is visible or an upload is still waiting for its verdict.
"use strict";

(() => {
  const POLL_MS = 2000;
  const form = document.getElementById("upload-form");
  const input = document.getElementById("file");
  const drop = document.getElementById("drop");
  const progress = document.getElementById("progress");
  const errorLine = document.getElementById("upload-error");
  const hintLine = document.getElementById("upload-hint");
  const receipt = document.getElementById("receipt");
  const rows = document.querySelector("#submissions tbody");
  const status = document.getElementById("subs-status");
  const limit = Number(form.dataset.limit);
  let pending = rows.querySelector('tr:not([data-state="judged"]):not([data-state="failed"])') !== null;
  let timer = null;
  let asking = false;
  let stopped = false;

  const sentence = (text) => {
    const trimmed = String(text || "").trim();
    if (!trimmed) return "";
    const first = trimmed[0].toUpperCase() + trimmed.slice(1);
    return /[.!?]$/.test(first) ? first : `${first}.`;
  };
  const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
  const waitWords = (seconds) => seconds < 60
    ? plural(seconds, "second") : plural(Math.ceil(seconds / 60), "minute");
  const sizeWords = (bytes) => {
    if (bytes >= 1048576) return `${+(bytes / 1048576).toFixed(2)} MiB`;
    if (bytes >= 1024) return `${+(bytes / 1024).toFixed(1)} KiB`;
    return plural(bytes, "byte");
  };

  const say = (line, text) => {
    line.textContent = text;
    line.hidden = !text;
  };

  const chosen = () => (input.files && input.files[0]) || null;

  const refusal = (xhr) => {
    let detail = "";
    try {
      detail = JSON.parse(xhr.responseText).detail || "";
    } catch (_) {
      detail = "";
    }
    if (!detail) detail = `the server refused the upload (HTTP ${xhr.status})`;
    let text = sentence(detail);
    const wait = Number(xhr.getResponseHeader("Retry-After"));
    if ((xhr.status === 429 || xhr.status === 503) && wait > 0) {
      text += ` Try again in ${waitWords(wait)}.`;
    }
    if (xhr.status === 401) text += " Reload the page to sign in again.";
    return text;
  };

  const showReceipt = (answer) => {
    const facts = document.getElementById("receipt-facts");
    facts.replaceChildren();
    const items = [
      ["submission", answer.id], ["received at", answer.received_at],
      ["SHA-256", answer.sha256], ["receipt", answer.receipt],
      ["log entry", answer.log_leaf === null ? "not yet" : answer.log_leaf],
    ];
    for (const [name, value] of items) {
      const dt = document.createElement("dt");
      dt.textContent = name;
      const dd = document.createElement("dd");
      dd.textContent = String(value);
      facts.append(dt, dd);
    }
    const base = `/team/submissions/${encodeURIComponent(answer.id)}`;
    const download = document.getElementById("receipt-download");
    download.href = `${base}/receipt.json`;
    download.setAttribute("download", `receipt-${answer.id}.json`);
    document.getElementById("receipt-report").href = base;
    receipt.hidden = false;
  };

  const send = (file) => {
    say(errorLine, "");
    say(hintLine, "");
    if (file.size > limit) {
      say(errorLine, `The file is ${sizeWords(file.size)} (${file.size.toLocaleString("en")} bytes), `
        + `over the ${sizeWords(limit)} upload limit: it was not sent.`);
      return;
    }
    const body = new FormData();
    body.append("file", file, file.name);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", form.action);
    progress.value = 0;
    progress.hidden = false;
    xhr.upload.addEventListener("progress", (event) => {
      if (event.lengthComputable) progress.value = Math.round((100 * event.loaded) / event.total);
    });
    xhr.addEventListener("load", () => {
      progress.hidden = true;
      if (xhr.status !== 202) {
        say(errorLine, refusal(xhr));
        return;
      }
      const answer = JSON.parse(xhr.responseText);
      showReceipt(answer);
      if (answer.hint) say(hintLine, `Accepted, but ${answer.hint}`);
      pending = true;
      poll(true);
    });
    xhr.addEventListener("error", () => {
      progress.hidden = true;
      say(errorLine, "The upload did not reach the server: nothing was accepted. Try again.");
    });
    xhr.send(body);
  };

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const file = chosen();
    if (file === null) {
      say(errorLine, "Choose a file to upload first.");
      return;
    }
    send(file);
  });
  input.addEventListener("change", () => {
    const file = chosen();
    if (file !== null && file.size > limit) send(file); // refused at once, before any sending
  });
  for (const name of ["dragenter", "dragover"]) {
    drop.addEventListener(name, (event) => {
      event.preventDefault();
      drop.classList.add("over");
    });
  }
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (event) => {
    event.preventDefault();
    drop.classList.remove("over");
    const files = event.dataTransfer && event.dataTransfer.files;
    if (files && files.length) {
      input.files = files;
      send(files[0]);
    }
  });

  const cell = (text) => {
    const td = document.createElement("td");
    td.textContent = text;
    return td;
  };

  const draw = (listing) => {
    const lines = listing.rows.map((row) => {
      const tr = document.createElement("tr");
      tr.dataset.id = row.id;
      tr.dataset.state = row.state;
      const link = document.createElement("a");
      link.href = `/team/submissions/${encodeURIComponent(row.id)}`;
      link.textContent = row.id.slice(0, 8);
      const first = document.createElement("td");
      first.append(link);
      const state = document.createElement("span");
      state.className = `state state-${row.state}`;
      state.textContent = row.state;
      const stateCell = document.createElement("td");
      stateCell.append(state);
      tr.append(first, cell(row.received), stateCell, cell(row.result));
      return tr;
    });
    rows.replaceChildren(...lines);
    pending = listing.pending;
    const shown = listing.rows.length;
    const counted = `${listing.total.toLocaleString("en")}${listing.more ? "+" : ""}`;
    let text = "No uploads yet.";
    if (listing.total) {
      const which = shown < listing.total ? `the latest ${shown} of ${counted}` : `all ${counted}`;
      text = `Showing ${which}${pending ? "; waiting for judgement, this list follows it" : ""}.`;
    }
    status.textContent = text;
  };

  const wanted = () => !stopped && (document.visibilityState === "visible" || pending);

  const schedule = () => {
    clearTimeout(timer);
    timer = wanted() ? setTimeout(poll, POLL_MS) : null;
  };

  async function poll(now) {
    if (asking) return; // one request per page at a time
    if (now !== true && !wanted()) return;
    asking = true;
    try {
      const response = await fetch("/team/submissions.json", { cache: "no-store" });
      if (response.status === 401) {
        stopped = true;
        status.textContent = "Your session has ended: reload the page to sign in again.";
      } else if (response.ok) {
        draw(await response.json());
      }
    } catch (_) {
      // offline for a moment: the next turn asks again
    } finally {
      asking = false;
      schedule();
    }
  }

  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible" && timer === null && !asking) poll(true);
  });
  schedule();
})();
