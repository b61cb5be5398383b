"""The team's submissions as its page lists them: the latest first, each with its state and
its result in its game's words, and whether any is still to be judged (the page polls while
one is). One answer per team at a time is shared by every page the team has open."""

from __future__ import annotations

from typing import Any

from api.team_pages.games import game_page, when
from core.errors import read_failure
from core.ports import ApiStore
from core.records import Contest, ResultLine, Team
from core.states import SubmissionState

PAGE_READ = 500  # the results store's page
ROWS_READ_MOST = 2000  # a team's submissions read for a listing, at most (a few queries)
ROWS_SHOWN = 50  # the latest, on the page
DONE = (SubmissionState.JUDGED, SubmissionState.FAILED)


def team_rows(store: ApiStore, team: Team, contest: Contest) -> dict[str, Any]:
    """What `/team/submissions.json` answers: `rows` (the latest `ROWS_SHOWN`), `total` read,
    `pending` (any of them not judged or failed yet)."""
    lines: list[ResultLine] = []
    after = ""
    while len(lines) < ROWS_READ_MOST:
        page = store.results_page(contest.id, after, PAGE_READ, team.id)
        lines += page
        if len(page) < PAGE_READ:
            break
        after = page[-1].submission
    lines.sort(key=lambda line: (line.received_at, line.submission), reverse=True)
    shown = lines[:ROWS_SHOWN]
    fields = store.result_fields(
        contest.game, [line.result_id for line in shown if line.result_id is not None]
    )
    part = game_page(contest.game)
    rows = []
    for line in shown:
        found = fields.get(line.result_id) if line.result_id is not None else None
        result = part.result_text(found) if found else ""
        if line.state == SubmissionState.FAILED:
            sub = store.get_submission(line.submission)
            read = read_failure(sub.failure if sub is not None else None)
            result = read[1] if read is not None else "judging failed"
        rows.append(
            {
                "id": line.submission,
                "state": line.state,
                "received_at": line.received_at,
                "received": when(line.received_at),
                "judged_at": line.judged_at,
                "result": result,
            }
        )
    return {
        "rows": rows,
        "total": len(lines),
        "more": len(lines) >= ROWS_READ_MOST,
        "pending": any(line.state not in DONE for line in lines),
    }
