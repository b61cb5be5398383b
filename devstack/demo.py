"""Demo data for `tilejudge up --demo`: a contest, five teams and generated submissions, made
through the HTTP API exactly as an organiser and contestants would make them.

Team tokens are shown once by the API, so they are kept in `$TILEJUDGE_HOME/demo-teams.json`
(mode 0600); a restart then reuses the contest and teams instead of failing on duplicates.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from infra import api_client
from infra.api_client import Client, Retry, step
from judge import Lexicon, default_layout
from judge.generator import WordIndex, generate

CONTEST = "demo"
LEXICON_NAME = "words_alpha"
TEAMS = tuple(f"team-{n}" for n in range(1, 6))
MOVES = 3000
ILLEGAL_SHARE = 0.1
# Uploading the word list (several MB) and judging are local, but give a slow CI machine room.
TIMEOUT_S = 60.0


class DemoError(RuntimeError):
    """The API refused a demo step; the message names the step and the server's answer."""


def load_demo(
    api_url: str,
    admin_token: str,
    lexicon_path: Path,
    home: Path,
    transport: httpx.BaseTransport | None = None,
) -> None:
    """Create (or find again) the demo contest and teams, and upload their submissions once."""
    state_path = home / "demo-teams.json"
    with api_client.connect(api_url, admin_token, timeout=TIMEOUT_S, transport=transport) as api:
        words = lexicon_path.read_bytes()
        lexicon = _upload_lexicon(api, words)
        created = _ensure_contest(api, lexicon)
        # A newly created contest means the old tokens (if any) belong to a wiped database.
        state: dict[str, Any] = (
            {"contest": CONTEST, "teams": {}} if created else _read_state(state_path)
        )
        _ensure_teams(api, state, state_path)
        if state.get("submissions"):
            print(f"demo: contest {CONTEST!r} and its teams already exist", flush=True)
        else:
            state["submissions"] = _upload_all(api, state["teams"], words)
            _write_state(state_path, state)
    print(f"demo: leaderboard at {api_url}/v1/contests/{CONTEST}/leaderboard", flush=True)
    print(f"demo: team tokens in {state_path}", flush=True)


def _upload_lexicon(api: Client, words: bytes) -> str:
    with step("uploading the word list", DemoError):
        answer = api.request(
            "POST", "/v1/lexicons", params={"name": LEXICON_NAME}, content=words, accept=(409,)
        )
        # Already stored: contests may name a lexicon instead of giving its id.
        return LEXICON_NAME if answer.status == 409 else str(answer.json()["id"])


def _ensure_contest(api: Client, lexicon: str) -> bool:
    """True if the contest was created now, False if it already existed."""
    now = datetime.now(UTC).replace(microsecond=0)
    body = {
        "id": CONTEST,
        "title": "Demo contest",
        "opens_at": _iso(now - timedelta(hours=1)),
        "closes_at": _iso(now + timedelta(days=7)),
        "lexicon": lexicon,
    }
    with step("creating the contest", DemoError):
        return api.request("POST", "/v1/contests", json_body=body, accept=(409,)).status != 409


def _ensure_teams(api: Client, state: dict[str, Any], state_path: Path) -> None:
    teams: dict[str, dict[str, str]] = state.setdefault("teams", {})
    for name in TEAMS:
        if name in teams:
            continue
        with step(f"creating {name}", DemoError):
            answer = api.request(
                "POST", f"/v1/contests/{CONTEST}/teams", json_body={"name": name}, accept=(409,)
            )
            body = answer.json() if answer.status != 409 else None
        if body is None:
            # Its token was shown once, to a run whose state file is gone: nothing to upload as.
            print(f"demo: {name} exists but its token is not in {state_path}; skipping it")
            continue
        teams[name] = {"id": str(body["id"]), "token": str(body["token"])}
        _write_state(state_path, state)  # at once: the token cannot be fetched again


def _upload_all(api: Client, teams: dict[str, dict[str, str]], words: bytes) -> list[str]:
    index = WordIndex.build(Lexicon.from_bytes(words).words)
    layout = default_layout()
    uploaded = []
    for number, name in enumerate(TEAMS, start=1):
        team = teams.get(name)
        if team is None:
            continue
        for attempt in range(2 + number % 2):  # 2 or 3 each, so teams differ in count too
            data = generate(
                index, layout, seed=number * 100 + attempt, moves=MOVES, illegal_share=ILLEGAL_SHARE
            )
            with step(f"uploading for {name}", DemoError):
                receipt = _submit(api, team["token"], data)
            uploaded.append(str(receipt["id"]))
            print(f"demo: {name} uploaded submission {receipt['id']}", flush=True)
    return uploaded


def _submit(api: Client, token: str, data: bytes) -> dict[str, Any]:
    """An upload, sent again by the client's retry policy after no answer or a busy server."""
    return Retry().run(lambda: api.submit(CONTEST, data, token=token).json())


def _read_state(path: Path) -> dict[str, Any]:
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return {"contest": CONTEST, "teams": {}}
    return state if isinstance(state, dict) else {"contest": CONTEST, "teams": {}}


def _write_state(path: Path, state: dict[str, Any]) -> None:
    partial = path.with_suffix(".partial")
    # Created 0600 from the start: the file holds bearer tokens.
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as file:
        file.write(json.dumps(state, indent=2) + "\n")
    os.chmod(partial, 0o600)  # O_CREAT's mode does not apply to a leftover partial file
    partial.replace(path)


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
