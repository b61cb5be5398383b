"""The entries of a contest's transparency log (docs/transparency.md): what each says, its
canonical bytes, and the contest state a sequence of them implies.

One log per contest, an RFC 6962 Merkle tree (`core.tlog`) whose leaves are these entries in the
order their facts committed. An entry is canonical JSON: keys sorted, no spaces, ASCII only,
integers and strings only, so the same fact has one encoding and anyone can re-derive it. It
names ids, digests, times and verdicts, never an upload's content or a secret.

Kinds, by the `type` field:
- `upload`: an accepted upload (submission, team, its SHA-256 and size, receipt time);
- `verdict`: a result entering the standings (submission, ruleset, judge version, the game's
  result fields; a game log's `match`, which rival logs of one game share), live or from an
  applied rejudge (`rejudge` names the run);
- `failed`: a submission that will have no result (its reason code), live or at an apply;
- `rejudge`: a rejudge run applied (run, the ruleset it moved to);
- `settled`: a disputed game settled by the organiser (the log chosen, the game's match key):
  every other log of that game is passed over in its favour (`core.disputes`);
- `owner`: a shared submission passed to another team (its first uploader deleted);
- `team_deleted`: a team removed with its own submissions;
- `close`: the contest closed (its closing time).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

VERSION = 1
# Each kind's fields, and the type each must have (`optional`: may be left out). A
# verdict's `result` is the game's own object, checked by its shape only: no floats.
_STR, _INT, _RESULT = "string", "integer", "object or null"
FIELDS: dict[str, dict[str, str]] = {
    "upload": {
        "submission": _STR, "team": _STR, "sha256": _STR, "size": _INT, "received_at": _STR
    },
    "verdict": {
        "submission": _STR, "lexicon": _STR, "layout": _STR, "judge_version": _STR,
        "result": _RESULT,
    },
    "failed": {"submission": _STR, "reason": _STR},
    "rejudge": {"run": _STR, "lexicon": _STR, "layout": _STR},
    "settled": {"submission": _STR, "match": _STR},
    "owner": {"submission": _STR, "team": _STR, "received_at": _STR, "sha256": _STR},
    "team_deleted": {"team": _STR},
    "close": {"closes_at": _STR},
}  # fmt: skip
# `rejudge`: the run that made a verdict or failure; `nonce`: random, in an entry sealed while
# its contest is frozen, so its hash does not give away its few possible verdicts.
# `match`: in a game log's verdict, its seed and players (`Submission.match_key`).
OPTIONAL = {"rejudge": _STR, "nonce": _STR, "match": _STR}
KINDS = tuple(FIELDS)


def encode(fields: Mapping[str, Any]) -> bytes:
    """An entry's canonical bytes; `v` and `type` first by name, like every other key."""
    if fields.get("type") not in KINDS:
        raise ValueError(f"not a log entry kind: {fields.get('type')!r}")
    return json.dumps(
        {"v": VERSION, **fields}, sort_keys=True, separators=(",", ":"), ensure_ascii=True
    ).encode("ascii")


class EntryError(ValueError):
    """Bytes that are not a canonical entry of this log's format."""


def _no_floats(text: str) -> Any:
    raise ValueError(f"a number that is not an integer: {text[:20]}")


def decode(data: bytes) -> dict[str, Any]:
    """An entry back as its fields; EntryError unless the bytes are exactly the canonical
    encoding of an entry of a known kind with each of its fields of the right type (a log
    whose entries could be spelt two ways could hide one fact as another)."""
    try:
        fields = json.loads(data.decode("ascii"), parse_float=_no_floats, parse_constant=_no_floats)
    except (UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError, huge integers too
        raise EntryError(f"not an entry: {str(exc)[:200]}") from None
    if not isinstance(fields, dict) or fields.get("v") != VERSION:
        raise EntryError("not an entry of version 1")
    kind = fields.get("type")
    if kind not in FIELDS:
        raise EntryError(f"not a log entry kind: {str(kind)[:40]!r}")
    wanted = {"v": _INT, "type": _STR, **FIELDS[kind]}
    for name, value in fields.items():
        shape = wanted.get(name) or OPTIONAL.get(name)
        if shape is None:
            raise EntryError(f"a {kind} entry has no field {name[:40]!r}")
        if not _is(shape, value):
            raise EntryError(f"a {kind} entry's {name} is not a {shape}")
    missing = sorted(set(wanted) - set(fields))
    if missing:
        raise EntryError(f"a {kind} entry without {', '.join(missing)}")
    if encode({k: v for k, v in fields.items() if k != "v"}) != data:
        raise EntryError("an entry not in canonical form")
    return fields


def _is(shape: str, value: Any) -> bool:
    if shape == _STR:
        return isinstance(value, str)
    if shape == _INT:
        return isinstance(value, int) and not isinstance(value, bool)
    return value is None or isinstance(value, dict)


@dataclass(frozen=True)
class LogHead:
    """A contest's log as last signed: its size, root hash and the checkpoint note over them."""

    size: int
    root: bytes
    checkpoint: str


@dataclass
class Logged:
    """A submission as the log tells it: who sent it, when, and its latest outcome."""

    team: str
    received_at: str
    verdict: dict[str, Any] | None = None  # the game's result fields, None while pending
    ruleset: tuple[str, str] | None = None
    failed: str | None = None  # a reason code
    index: int = -1  # the leaf of its upload entry
    match: str | None = None  # a game log's seed and players, shared by rival logs
    passed_over_for: str | None = None  # the rival log a settlement chose over this one


@dataclass
class Implied:
    """What a contest's log entries imply, read in order."""

    submissions: dict[str, Logged] = field(default_factory=dict)
    deleted_teams: set[str] = field(default_factory=set)
    rulesets: list[tuple[str, str]] = field(default_factory=list)  # each rejudge's, in order
    # Each settlement of a disputed game, in order: (its leaf, the match, the log chosen).
    settlements: list[tuple[int, str, str]] = field(default_factory=list)
    closes_at: str | None = None
    problems: list[str] = field(default_factory=list)  # entries that contradict the ones before

    def live(self) -> dict[str, Logged]:
        """The submissions that count now: their team not deleted."""
        return {k: s for k, s in self.submissions.items() if s.team not in self.deleted_teams}


def implied(entries: Iterable[tuple[int, dict[str, Any]]]) -> Implied:
    """Replay (leaf index, fields) pairs in order into what they imply, noting any entry that
    contradicts the ones before it (a verdict for an upload never logged, an upload after the
    close)."""
    state = Implied()
    for index, entry in entries:
        _apply(state, index, entry)
    _pass_over(state)
    return state


def _apply(state: Implied, index: int, entry: dict[str, Any]) -> None:
    kind, sid = entry["type"], entry.get("submission", "")
    found = state.submissions.get(sid)
    if kind == "upload":
        if state.closes_at is not None and entry["received_at"] >= state.closes_at:
            state.problems.append(f"entry {index}: an upload received after the close")
        if found is None:
            state.submissions[sid] = Logged(entry["team"], entry["received_at"], index=index)
    elif kind in ("verdict", "failed", "owner"):
        if found is None:
            state.problems.append(f"entry {index}: a {kind} for {sid}, never logged as uploaded")
            return
        if kind == "owner":  # a shared game passed on: its new owner's copy counts
            found.team, found.received_at = entry["team"], entry["received_at"]
        elif kind == "verdict":
            found.verdict, found.failed = entry["result"], None
            found.ruleset = (entry["lexicon"], entry["layout"])
            found.match = entry.get("match", found.match)
        else:
            found.verdict, found.failed, found.ruleset = None, entry["reason"], None
    elif kind == "rejudge":
        state.rulesets.append((entry["lexicon"], entry["layout"]))
    elif kind == "settled":
        _settle(state, index, entry)
    elif kind == "team_deleted":
        state.deleted_teams.add(entry["team"])
    elif kind == "close" and state.closes_at is None:
        state.closes_at = entry["closes_at"]


def _settle(state: Implied, index: int, entry: dict[str, Any]) -> None:
    """A disputed game settled: noted, and applied once every entry is read (`_pass_over`).
    Its chosen log was judged valid before it, so its verdict, with its match, came first."""
    chosen = state.submissions.get(entry["submission"])
    if chosen is None or chosen.match != entry["match"]:
        state.problems.append(f"entry {index}: a settlement for a log not of its game")
        return
    state.settlements.append((index, entry["match"], entry["submission"]))


def _pass_over(state: Implied) -> None:
    """Each log of a settled game uploaded before the game's latest settlement after it is
    passed over for that settlement's chosen log (the settlement's transaction passed over
    every log then stored; a log's match is known from its verdict, which may come later)."""
    by_match: dict[str, list[tuple[int, str]]] = {}
    for leaf, match, chosen in state.settlements:
        by_match.setdefault(match, []).append((leaf, chosen))
    for sid, logged in state.submissions.items():
        later = [
            chosen for leaf, chosen in by_match.get(logged.match or "", []) if leaf > logged.index
        ]
        if later and later[-1] != sid:
            logged.passed_over_for = later[-1]
