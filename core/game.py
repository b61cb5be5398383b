"""What a game is to the pipeline: one boundary, implemented once per game (`core.games.*`) and
chosen by name through the registry (`core.games.game`). Generic modules ask the game of a
contest and never branch on which game it is.

A game says how an upload is recognised at a glance (`looks_like`) and keyed (`identity`), how
its rules data beside the word list is read and shown (`parse_rules`, `rules_json`,
`default_rules`), and how an upload is judged into a result and a report (`judge`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from core.records import JudgedResult
from core.transparency import Logged
from judge import Lexicon


@dataclass(frozen=True)
class Identity:
    """What makes two uploads one submission.

    `key` None: each team's uploads are its own, the same bytes from the same team being one
    submission (a Wordytaire move list). Otherwise uploads with the same `key` are one
    submission whichever team of the contest sent them and in whatever bytes (a Crosstiles game
    log, read as the verifier reads it); `match`, when given, is the game's seed and players:
    uploads that share it with other keys are rival logs of one game, all kept, of which the
    standings count only one (`core.disputes`).
    """

    key: str | None = None
    match: str | None = None


# The report as JSON, in pieces, given the fields it opens with (submission, contest).
ReportPieces = Callable[[Mapping[str, Any]], Iterable[bytes]]


@dataclass(frozen=True)
class Judged:
    """An upload judged: its result row, the distinct words it looked up in the list (each
    once: its signature holds a hash a word, `core.word_hashes`), and its report."""

    result: JudgedResult
    words: Iterable[str]
    report: ReportPieces


class Rules(Protocol):
    """A game's rules data beside the word list (a layout, a board): content-addressed."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...


class Game(Protocol):
    """One game, as the pipeline sees it."""

    @property
    def name(self) -> str: ...  # as contests, the API and the CLI spell it
    @property
    def rules_noun(self) -> str: ...  # what its rules data is called: "layout", "board"
    @property
    def shared_uploads(self) -> bool:
        """An upload names players besides the team sending it: only teams the organiser
        allows may upload, and one game counts once whoever sends it (`identity`)."""
        ...

    @property
    def words_vary(self) -> bool:
        """The words judging looks up can depend on the word list (a game log stops at its
        first failing line): a rejudge adds them to the recorded word signature."""
        ...

    @property
    def rules_errors(self) -> tuple[type[Exception], ...]: ...  # rules data that cannot be read
    def identity(self, data: bytes) -> Identity: ...
    def looks_like(self, data: bytes) -> bool:
        """Whether `data` reads, at a glance (its first lines, never the whole upload), as one
        of this game's uploads: an upload to a contest of another game that one of them
        recognises and its own game does not gets a hint (`core.upload_hints`)."""
        ...

    def default_rules(self) -> Rules: ...
    def parse_rules(self, content: str) -> Rules: ...  # one of `rules_errors` if it cannot
    def rules_json(self, rules: Any) -> str: ...  # as registered: `parse_rules` reads it back
    def judge(self, data: bytes, lexicon: Lexicon, rules: Any, report_key: str) -> Judged: ...
    def log_result(self, result: JudgedResult) -> dict[str, Any]:
        """A judged result as its verdict entry in the transparency log states it: what the
        standings are computed from, nothing of the upload (`infra.sql.games` reads the same
        fields back from the stored rows)."""
        ...

    def log_standings(
        self, logged: Mapping[str, Logged], options: Mapping[str, Any] | None = None
    ) -> dict[str, list[dict[str, Any]]]:
        """The standings a contest's transparency log implies (`core.transparency`), from each
        counted submission's latest verdict and the contest's `options`: lists keyed as the
        API's standings are, each row with the fields an entry can tell (no names: ids and
        nicks)."""
        ...

    def contest_options(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """The options a contest of this game is created with, checked and completed (what
        its standings are computed with, besides the rules data); Invalid, with one sentence,
        for options the game does not take. `{}` given: the game's defaults."""
        ...

    def sample(self, lexicon: Lexicon, rules: Any, seed: int, size: int) -> bytes:
        """A generated upload (the same seed, the same bytes) of about `size` lines, mostly
        legal: what the demo and the load tests send."""
        ...
