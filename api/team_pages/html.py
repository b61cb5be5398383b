"""The team page's HTML, written on the server: the sign-in form, the team's page (its upload
form and its submissions) and a submission's report. Every value from a team, an organiser or a
report is escaped here; each game's part of a report is its own module's (`games`).

The pages run no inline script or style (the dashboard's Content-Security-Policy): the team page
loads `/team/static/team.js`, which uploads with progress and keeps the list current."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from api.team_pages.games import e, facts, when
from api.team_pages.log_check import Checked
from core import clock
from core.freeze import frozen
from core.records import Contest, Submission, Team

STYLESHEET = "/team/static/team.css"
SCRIPT = "/team/static/team.js"
MIB = 1024 * 1024


def page(title: str, body: str, *, script: bool = False, signed_in: bool = True) -> str:
    """A whole page: the header (with the sign-out button when signed in), then `body`."""
    sign_out = ""
    if signed_in:
        sign_out = (
            '<form method="post" action="/team/logout" class="sign-out">'
            '<button type="submit" class="link">Sign out</button></form>'
        )
    tail = f'<script src="{SCRIPT}"></script>' if script else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{e(title)} · tilejudge</title><link rel="icon" href="data:,">
<link rel="stylesheet" href="{STYLESHEET}"></head>
<body>
<header class="top"><p class="brand"><a href="/team">tilejudge <span>team</span></a></p>
{sign_out}</header>
<main>{body}</main>{tail}</body></html>"""


def sign_in(message: str = "") -> str:
    notice = f'<p class="error" role="alert">{e(message)}</p>' if message else ""
    body = f"""<section class="panel narrow" aria-labelledby="sign-in">
<h1 id="sign-in">Your team's page</h1>
<p>Sign in with the team token the organiser gave your team, to upload from this browser,
follow your submissions and read their reports.</p>{notice}
<form method="post" action="/team/login">
<label for="token">Team token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button></form></section>"""
    return page("Sign in", body, signed_in=False)


def team_page(team: Team, contest: Contest, listing: Mapping[str, Any], limit: int) -> str:
    body = f"""<h1>{e(team.name)}</h1>
<p class="lead">Contest <strong>{e(contest.title)}</strong> ({e(contest.id)}, {e(contest.game)}):
{e(contest_clock(contest))}</p>
<section class="panel" aria-labelledby="upload-heading">
<h2 id="upload-heading">Upload</h2>
<form id="upload-form" method="post" action="/team/upload" enctype="multipart/form-data"
data-limit="{limit}">
<div id="drop" class="drop">
<label for="file">Choose a file, or drop it here</label>
<input id="file" name="file" type="file" required aria-describedby="limit-note">
</div>
<p id="limit-note" class="caption">Files up to <strong>{e(size_words(limit))}</strong>
({limit:,} bytes): a larger one is refused before it is sent.</p>
<div class="actions"><button type="submit" id="send">Upload</button>
<progress id="progress" max="100" value="0" hidden aria-label="Upload progress"></progress></div>
<p id="upload-error" class="error" role="alert" hidden></p>
<p id="upload-hint" class="hint" role="status" hidden></p>
</form>
<div id="receipt" hidden>
<h3>Receipt</h3><dl class="facts" id="receipt-facts"></dl>
<p><a id="receipt-download" href="#" download>Download the receipt (JSON)</a>
· <a id="receipt-report" href="#">Its report page</a></p></div>
</section>
<section class="panel" aria-labelledby="subs-heading">
<h2 id="subs-heading">Your submissions</h2>
<p id="subs-status" class="caption">{e(listing_status(listing))}</p>
<div class="table-wrap"><table id="submissions"><thead><tr><th>submission</th><th>received</th>
<th>state</th><th>result</th></tr></thead>
<tbody>{"".join(submission_row(row) for row in listing["rows"])}</tbody></table></div>
</section>"""
    return page(team.name, body, script=True)


def listing_status(listing: Mapping[str, Any]) -> str:
    """The line above the list (the page's script writes the same)."""
    total, shown = listing["total"], len(listing["rows"])
    if not total:
        return "No uploads yet."
    counted = f"{total:,}{'+' if listing['more'] else ''}"
    latest = f"the latest {shown} of {counted}" if shown < total else f"all {total:,}"
    pending = "; waiting for judgement, this list follows it" if listing["pending"] else ""
    return f"Showing {latest}{pending}."


def submission_row(row: Mapping[str, Any]) -> str:
    href = f"/team/submissions/{quote(str(row['id']), safe='')}"
    return (
        f'<tr data-id="{e(row["id"])}" data-state="{e(row["state"])}">'
        f'<td><a href="{e(href)}">{e(str(row["id"])[:8])}</a></td>'
        f"<td>{e(row['received'])}</td>"
        f'<td><span class="state state-{e(row["state"])}">{e(row["state"])}</span></td>'
        f"<td>{e(row['result'])}</td></tr>"
    )


def report_page(
    sub: Submission,
    judged: Mapping[str, Any] | None,
    shown: str,
    checks: Sequence[Checked],
) -> str:
    """A submission's page: its facts, `shown` (its game's report, or why there is none yet),
    its receipt and log checks in words and links to its JSON."""
    base = f"/team/submissions/{quote(sub.id, safe='')}"
    items = "".join(f'<li class="{_mark(check.ok)}">{e(check.sentence)}</li>' for check in checks)
    about = {
        "submission": sub.id,
        "state": sub.state,
        "received at": when(sub.received_at),
        "judged at": when((judged or {}).get("judged_at")),
        "SHA-256": sub.sha256,
    }
    body = f"""<article class="panel" aria-labelledby="title">
<p><a href="/team">← your page</a></p>
<h1 id="title">Submission {e(sub.id[:8])}</h1>
{facts(about)}
<section aria-labelledby="report-heading"><h2 id="report-heading">Report</h2>{shown}
<p><a href="{e(base)}/report.json?lines=runs" type="application/json">The report as JSON</a></p>
</section>
<section aria-labelledby="checks-heading"><h2 id="checks-heading">Receipt and log</h2>
<ul class="checks">{items}</ul>
<p><a href="{e(base)}/receipt.json" download>Download the receipt (JSON)</a></p></section>
</article>"""
    return page(f"Submission {sub.id[:8]}", body)


def not_found() -> str:
    body = """<section class="panel narrow" aria-labelledby="missing">
<h1 id="missing">No such submission</h1>
<p>None of your team's submissions has this id. <a href="/team">Back to your page</a>.</p>
</section>"""
    return page("Not found", body)


def contest_clock(contest: Contest) -> str:
    now = clock.now()
    if now < contest.opens_at:
        said = f"opens at {when(contest.opens_at)}."
    elif now <= contest.closes_at:
        said = f"open until {when(contest.closes_at)}."
    else:
        said = f"closed at {when(contest.closes_at)}."
    if frozen(contest, now):
        said += " The public standings are frozen; your own verdicts still show here."
    return said


def size_words(size: int) -> str:
    if size >= MIB:
        return f"{size / MIB:g} MiB"
    if size >= 1024:
        return f"{size / 1024:g} KiB"
    return f"{size} bytes"


def _mark(ok: bool | None) -> str:
    return "wait" if ok is None else "ok" if ok else "bad"
