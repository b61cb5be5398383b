"""Demo data for `tilejudge up --demo`: a contest judged with the word list as it was before the
fix (`words_alpha_2020-08-24`), five teams and their generated submissions, made through the
HTTP API exactly as an organiser and contestants would make them.

Two teams' bots open every game with a word the fix changes: team-3 with `cyber`, which the 2020
list lacks, and team-5 with `unneccessary`, a misspelling it accepts. Under the 2020 list team-3's
games come to nothing (after the refused opening no move covers the origin); rejudged under the
fixed list team-3's stand and team-5's fall, so the leaderboard shows what the fix changes.

Beside it, a Crosstiles contest (`demo-crosstiles`, judged with `crosstiles.txt` on the classic
board): two clubs allowed to upload game logs send whole games the bot played, a few of them
spoilt on one line (a word respelt, a score miscounted, the end cut off), so its standings rank
the players of the valid games and list the invalid ones with their failing line. It needs
`crosstiles.txt` beside the Wordytaire list (in the cache `make lexicon` fills); without it the
demo says so and skips that contest.

Team tokens are shown once by the API, so each is kept in `$TILEJUDGE_HOME/demo-tokens/TEAM`
(mode 0600, one line, ready for `$(cat …)`) and the rest in `$TILEJUDGE_HOME/demo.json`; a
restart then reuses the contests and teams instead of failing on duplicates.
"""

from __future__ import annotations

import json
import os
import random
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from operator import itemgetter
from pathlib import Path
from typing import Any

import httpx

from core.states import SubmissionState
from infra import api_client, lexicon_files
from infra.api_client import Client, Retry, step
from infra.settings import ClientSettings
from judge import Lexicon
from judge.crosstiles import corrupt, default_board
from judge.crosstiles import generate as play_game
from judge.wordytaire import Layout, default_layout, judge
from judge.wordytaire.generator import WordIndex, generate

CONTEST = "demo"
LEXICON_FILE = lexicon_files.BEFORE_FIX.file
LEXICON_NAME = Path(LEXICON_FILE).stem  # words_alpha_2020-08-24
TEAMS = tuple(f"team-{n}" for n in range(1, 6))
# Each team's bot opens every game with this word, played through the origin.
OPENINGS = {"team-3": "cyber", "team-5": "unneccessary"}
MOVES = 3000
ILLEGAL_SHARE = 0.1
GAMES_CONTEST = "demo-crosstiles"
GAMES_LIST = lexicon_files.CROSSTILES_LIST.file
GAMES_LIST_NAME = Path(GAMES_LIST).stem  # crosstiles
CLUBS = ("club-1", "club-2")  # allowed to upload game logs
GAMES = 12  # whole games per club
# The clubs' players: each game seats two to four of them.
PLAYERS = ("ada", "bo", "cleo", "dev", "eli", "fay", "gus", "hal")
# Game numbers spoilt, and how (judge.crosstiles.generator.CORRUPTIONS): invalid games to list.
SPOILT = {2: "word", 5: "score", 9: "truncate"}
# Uploading the word list (several MB) and judging are local, but give a slow CI machine room.
TIMEOUT_S = 60.0
# The demo's uploads are judged in seconds; past this it says so and leaves the stack running.
JUDGED_WITHIN_S = 120.0
POLL_S = 0.5
# A move line whose four numbers can be moved (up to 18 digits: a longer one is malformed and
# stays so), keeping the line's own spacing.
_MOVE = re.compile(
    rb"([ \t]*)(-?\d{1,18})([ \t]+)(-?\d{1,18})([ \t]+)(-?\d{1,18})([ \t]+)(-?\d{1,18})([ \t]+\S+[ \t]*)"
)


class DemoError(RuntimeError):
    """The API refused a demo step; the message names the step and the server's answer."""


def demo_lexicon(settings: ClientSettings) -> Path:
    """The demo contest's word list, from the cache `make lexicon` fills."""
    if (settings.lexicon_cache / LEXICON_FILE).is_file():
        return settings.lexicon_cache / LEXICON_FILE
    raise lexicon_files.LexiconNotFound(
        f"the demo's word list {LEXICON_FILE} is not in {settings.lexicon_cache}: run "
        "`make lexicon` (or `tilejudge lexicon fetch`) first"
    )


def tokens_dir(home: Path) -> Path:
    """Where the demo keeps its teams' tokens, one file per team."""
    return home / "demo-tokens"


def load_demo(
    api_url: str,
    admin_token: str,
    lexicon_path: Path,
    home: Path,
    transport: httpx.BaseTransport | None = None,
    wait: bool = True,
) -> None:
    """Create (or find again) the demo contests and teams, upload their submissions once, and
    with `wait` see them judged."""
    state_path, tokens = home / "demo.json", tokens_dir(home)
    games_list = games_lexicon(lexicon_path)
    with api_client.connect(api_url, admin_token, timeout=TIMEOUT_S, transport=transport) as api:
        words = lexicon_path.read_bytes()
        lexicon = _upload_lexicon(api, words, LEXICON_NAME)
        created = _ensure_contest(api, CONTEST, "Demo contest", lexicon)
        # A newly created contest means the old tokens (if any) belong to a wiped database.
        state: dict[str, Any] = (
            {"contest": CONTEST, "teams": {}} if created else _read_state(state_path)
        )
        _ensure_teams(api, state, state, state_path, tokens, CONTEST, TEAMS)
        if state.get("submissions"):
            print(f"demo: contest {CONTEST!r} and its teams already exist", flush=True)
        else:
            state["submissions"] = _upload_all(api, state["teams"], tokens, words)
            _write_private(state_path, json.dumps(state, indent=2) + "\n")
        if wait:
            _wait_judged(api, state["submissions"])
        if games_list is None:
            print(
                f"demo: no {GAMES_LIST} beside {lexicon_path} (run `make lexicon`): the "
                f"Crosstiles contest {GAMES_CONTEST!r} is skipped",
                flush=True,
            )
        else:
            logs = _load_games(api, state, state_path, tokens, games_list.read_bytes())
            if wait:
                _wait_judged(api, logs, "game logs")
        # A rejudge since an earlier start may have moved a contest to another list: named as
        # the server has it now, not as the demo first made it.
        used = list_in_use(api, CONTEST)
        games_used = list_in_use(api, GAMES_CONTEST) if games_list is not None else ""
    print(f"demo: contest {CONTEST!r} judged with the word list {used}", flush=True)
    if games_list is not None:
        print(
            f"demo: contest {GAMES_CONTEST!r}: Crosstiles game logs judged with {games_used}",
            flush=True,
        )
    print(f"demo: team tokens in {tokens}/ (one file per team)", flush=True)
    print(f"demo: leaderboard: tilejudge leaderboard --contest {CONTEST}", flush=True)
    if games_list is not None:
        print(f"demo: standings: tilejudge leaderboard --contest {GAMES_CONTEST}", flush=True)


def list_in_use(api: Client, contest: str) -> str:
    """The name of the word list the contest is judged with now (its id where it has none)."""
    with step(f"reading the contest {contest}", DemoError):
        lexicon_id = str(api.call("GET", f"/v1/contests/{contest}")["lexicon"])
        listed = api.call("GET", "/v1/lexicons")["lexicons"]
    return next((str(row["name"]) for row in listed if row["id"] == lexicon_id), lexicon_id)


def games_lexicon(lexicon_path: Path) -> Path | None:
    """The Crosstiles contest's word list, beside the Wordytaire one (the cache holds both)."""
    path = lexicon_path.parent / GAMES_LIST
    return path if path.is_file() else None


def _load_games(
    api: Client, state: dict[str, Any], state_path: Path, tokens: Path, words: bytes
) -> list[str]:
    """The Crosstiles contest, its clubs and their game logs, made once; the logs' ids."""
    lexicon = _upload_lexicon(api, words, GAMES_LIST_NAME)
    created = _ensure_contest(api, GAMES_CONTEST, "Demo Crosstiles games", lexicon, "crosstiles")
    games: dict[str, Any] = state.get("crosstiles", {})
    if created or not games:
        games = state["crosstiles"] = {"contest": GAMES_CONTEST, "teams": {}}
    _ensure_teams(api, state, games, state_path, tokens, GAMES_CONTEST, CLUBS, uploads_logs=True)
    if games.get("submissions"):
        print(f"demo: contest {GAMES_CONTEST!r} and its clubs already exist", flush=True)
        return list(games["submissions"])
    games["submissions"] = _upload_games(api, games["teams"], tokens, Lexicon.from_bytes(words))
    _write_private(state_path, json.dumps(state, indent=2) + "\n")
    return list(games["submissions"])


def _upload_games(api: Client, clubs: dict[str, str], tokens: Path, lexicon: Lexicon) -> list[str]:
    """Each club's games, two to four players each, a few spoilt on one line."""
    board = default_board()
    uploaded = []
    for club_number, club in enumerate(CLUBS):
        if club not in clubs:
            continue
        token = (tokens / club).read_text().strip()
        for number in range(GAMES):
            seed = f"demo-{club_number}-{number}"
            log = play_game(
                2 + number % 3, seed, lexicon, board,
                exchanges=number % 2 == 0, passes=number % 3 == 1, timeouts=number % 4 == 3,
                rng_seed=number,
            )  # fmt: skip
            rng = random.Random(seed)
            log = with_players(log, rng.sample(PLAYERS, 2 + number % 3))
            if number in SPOILT:
                log = corrupt(log, SPOILT[number], rng)
            with step(f"uploading a game log for {club}", DemoError):
                receipt = _submit(api, token, log, GAMES_CONTEST)
            uploaded.append(str(receipt["id"]))
        print(f"demo: {club} uploaded {GAMES} game logs", flush=True)
    return uploaded


def with_players(log: bytes, nicks: Sequence[str]) -> bytes:
    """A log the bot wrote (its players are always ann, bob, cy and dee, with made-up full
    names) with `nicks` in their seats instead, and no full names."""
    renamed: dict[str, str] = {}
    lines = []
    for line in log.decode().split("\n"):
        if line.startswith("#player"):
            pragma, nick = line.split(" ")[:2]
            renamed[nick] = nicks[int(pragma.removeprefix("#player")) - 1]
            line = f"{pragma} {renamed[nick]}"
        elif line.startswith(">"):
            nick, rest = line[1:].split(":", 1)
            line = f">{renamed[nick]}:{rest}"
        lines.append(line)
    return "\n".join(lines).encode()


def _upload_lexicon(api: Client, words: bytes, name: str) -> str:
    with step(f"uploading the word list {name}", DemoError):
        answer = api.request(
            "POST", "/v1/lexicons", params={"name": name}, content=words, accept=(409,)
        )
        # Already stored: contests may name a lexicon instead of giving its id.
        return name if answer.status == 409 else str(answer.json()["id"])


def _ensure_contest(
    api: Client, contest: str, title: str, lexicon: str, game: str = "wordytaire"
) -> bool:
    """True if the contest was created now, False if it already existed."""
    now = datetime.now(UTC).replace(microsecond=0)
    body = {
        "id": contest,
        "title": title,
        "opens_at": _iso(now - timedelta(hours=1)),
        "closes_at": _iso(now + timedelta(days=7)),
        "lexicon": lexicon,
        "game": game,
    }
    with step(f"creating the contest {contest}", DemoError):
        return api.request("POST", "/v1/contests", json_body=body, accept=(409,)).status != 409


def _ensure_teams(
    api: Client,
    state: dict[str, Any],
    part: dict[str, Any],
    state_path: Path,
    tokens: Path,
    contest: str,
    names: tuple[str, ...],
    uploads_logs: bool = False,
) -> None:
    """The teams `names` of `contest`, recorded in `part` (of `state`, written each time)."""
    teams: dict[str, str] = part.setdefault("teams", {})  # name -> id
    for name in names:
        if name in teams and (tokens / name).is_file():
            continue
        with step(f"creating {name}", DemoError):
            answer = api.request(
                "POST",
                f"/v1/contests/{contest}/teams",
                json_body={"name": name, "uploads_logs": uploads_logs},
                accept=(409,),
            )
            body = answer.json() if answer.status != 409 else None
        if body is None:
            # Its token was shown once, to a run whose files are gone: nothing to upload as.
            print(f"demo: {name} exists but its token is not in {tokens}; skipping it")
            teams.pop(name, None)
            continue
        # At once, token first: it cannot be fetched again.
        tokens.mkdir(mode=0o700, exist_ok=True)
        _write_private(tokens / name, str(body["token"]) + "\n")
        teams[name] = str(body["id"])
        _write_private(state_path, json.dumps(state, indent=2) + "\n")


def _upload_all(api: Client, teams: dict[str, str], tokens: Path, words: bytes) -> list[str]:
    lexicon = Lexicon.from_bytes(words)
    index = WordIndex.build(lexicon.words)
    layout = default_layout()
    uploaded = []
    for number, name in enumerate(TEAMS, start=1):
        if name not in teams:
            continue
        token = (tokens / name).read_text().strip()
        for attempt in range(2 + number % 2):  # 2 or 3 each, so teams differ in count too
            data = generate(
                index, layout, seed=number * 100 + attempt, moves=MOVES, illegal_share=ILLEGAL_SHARE
            )
            if name in OPENINGS:
                data = open_with(OPENINGS[name], data, lexicon, layout)
            with step(f"uploading for {name}", DemoError):
                receipt = _submit(api, token, data)
            uploaded.append(str(receipt["id"]))
            print(f"demo: {name} uploaded submission {receipt['id']}", flush=True)
    return uploaded


def open_with(word: str, game: bytes, lexicon: Lexicon, layout: Layout) -> bytes:
    """`game` opened with `word` through the origin and the rest moved, so that the game's
    first legal move touches `word` but not the origin. Where `word` is accepted the game is
    played as it was generated, around it; where it is refused, the game's first move fails and
    so does most of what was built on it. `lexicon` is the one `game` was generated with."""
    lines = game.split(b"\n")
    legal = [verdict.line for verdict in judge(game, lexicon, layout).verdicts if verdict.ok]
    if not legal:
        raise ValueError("the game has no legal move to open")
    placed = _placed(lines, legal)
    first = {cell: letter for cell, (line, letter) in placed.items() if line == legal[0]}
    best = max(_openings(word, first, placed, len(lines) + 1), key=itemgetter(0), default=None)
    if best is None:
        raise ValueError(f"{word!r} cannot open a game that starts with {first}")
    _, shift, opening = best
    return opening.encode() + b"\n" + b"\n".join(_moved(line, shift) for line in lines)


Cells = dict[tuple[int, int], str]


def _openings(
    word: str, first: Cells, placed: dict[tuple[int, int], tuple[int, str]], end: int
) -> Iterator[tuple[int, tuple[int, int], str]]:
    """Each way to play `word` through the origin with the game's first move (`first`) moved
    to touch it off the origin: (the first line of the game that wants another letter on a cell
    of `word`, else `end`; the game's shift; the opening line). A line that wants another
    letter fails, and so may what is built on it: the later the better."""
    for across in (True, False):
        for k in range(len(word)):
            cells = {((n - k, 0) if across else (0, n - k)): c for n, c in enumerate(word)}
            for shift in _touching(cells, first):
                moved = {(x + shift[0], y + shift[1]): c for (x, y), c in first.items()}
                if (0, 0) in moved or moved.keys() <= cells.keys():
                    continue  # it would cover the origin, or place nothing new
                if any(cells.get(cell, c) != c for cell, c in moved.items()):
                    continue
                clash = min(
                    (
                        line
                        for (x, y), c in cells.items()
                        for line, was in [placed.get((x - shift[0], y - shift[1]), (end, c))]
                        if was != c
                    ),
                    default=end,
                )
                (x1, y1), (x2, y2) = min(cells), max(cells)
                yield clash, shift, f"{x1} {y1} {x2} {y2} {word}"


def _touching(cells: Cells, first: Cells) -> list[tuple[int, int]]:
    """Shifts that put a cell of `first` on or edge to edge with a cell of `cells`."""
    steps = ((0, 0), (1, 0), (-1, 0), (0, 1), (0, -1))
    return sorted(
        {(x + dx - fx, y + dy - fy) for x, y in cells for dx, dy in steps for fx, fy in first}
    )


def _placed(lines: list[bytes], legal: Iterable[int]) -> dict[tuple[int, int], tuple[int, str]]:
    """The line that put a tile on each cell, and its letter, once the legal lines are played."""
    placed: dict[tuple[int, int], tuple[int, str]] = {}
    for number in legal:
        x1, y1, _, y2, word = lines[number - 1].split()
        dx, dy = (1, 0) if int(y1) == int(y2) else (0, 1)
        for n, letter in enumerate(word.decode()):
            placed.setdefault((int(x1) + n * dx, int(y1) + n * dy), (number, letter))
    return placed


def _moved(line: bytes, shift: tuple[int, int]) -> bytes:
    """A move line moved by `shift`; any other line as it is."""
    match = _MOVE.fullmatch(line)
    if match is None:
        return line
    parts = list(match.groups())
    for index, delta in ((1, shift[0]), (3, shift[1]), (5, shift[0]), (7, shift[1])):
        parts[index] = str(int(parts[index]) + delta).encode()
    return b"".join(parts)


def _submit(api: Client, token: str, data: bytes, contest: str = CONTEST) -> dict[str, Any]:
    """An upload, sent again by the client's retry policy after no answer or a busy server."""
    return Retry().run(lambda: api.submit(contest, data, token=token).json())


def _wait_judged(api: Client, submissions: list[str], what: str = "submissions") -> None:
    deadline = time.monotonic() + JUDGED_WITHIN_S
    waiting = list(submissions)
    while waiting:
        with step("asking for a submission's state", DemoError):
            state = api.call("GET", f"/v1/submissions/{waiting[0]}")["state"]
        if state in (SubmissionState.JUDGED, SubmissionState.FAILED):
            waiting.pop(0)
        elif time.monotonic() > deadline:
            print(f"demo: {len(waiting)} {what} not judged yet; the workers go on", flush=True)
            return
        else:
            time.sleep(POLL_S)
    print(f"demo: {len(submissions)} {what} judged", flush=True)


def _read_state(path: Path) -> dict[str, Any]:
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return {"contest": CONTEST, "teams": {}}
    return state if isinstance(state, dict) else {"contest": CONTEST, "teams": {}}


def _write_private(path: Path, text: str) -> None:
    """Replace `path` atomically with `text`, readable by its owner only (it may hold tokens)."""
    partial = path.with_name(path.name + ".partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as file:
        file.write(text)
    os.chmod(partial, 0o600)  # O_CREAT's mode does not apply to a leftover partial file
    partial.replace(path)


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
