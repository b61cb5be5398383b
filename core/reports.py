"""A judged upload's report as the API serves it: the object the worker stored, or, for an upload
whose report the worker left to be asked for (`report_blobs.deferrable`), the report made on its
first read from the upload's bytes under the ruleset its key names (the result's own, or, for a
result carried over by an affected-only rejudge, the one it was first judged under), then stored
under that key so that every later read is a plain stream of the stored object.

A report is a pure function of the upload's bytes, the word list, the rules data and the judge:
the first three are kept by id, and the judge is checked by judging again. If what the running
judge finds differs from the recorded result (another judge version recorded it), no report is
made: a report is never wrong for the result it is served with.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

import structlog

from core import report_blobs
from core.errors import BlobNotFound, Conflict, NotFound, UnknownRuleset, UploadCorrupt
from core.games import game
from core.judging import packed_report, read_upload
from core.ports import BlobStore, Rulesets
from core.records import Contest, JudgedResult, StoredResult, Submission
from core.report_blobs import report_ruleset

log = structlog.get_logger("tilejudge.api")

_PIECE = 64 * 1024  # a made report is sent in pieces of this size, as a stored one streams


class ReportUnavailable(Conflict):
    """The report of a recorded result cannot be made here: the running judge does not find
    what was recorded (another judge version judged it), or its ruleset or its upload is no
    longer stored."""


class ReportSources(Protocol):
    def get_contest(self, contest_id: str) -> Contest | None: ...
    def get_submission(self, submission_id: str) -> Submission | None: ...


@dataclass
class Reports:
    """Where reports come from: the stored objects, and what making one again needs."""

    store: ReportSources
    blobs: BlobStore
    rulesets: Rulesets
    max_report_bytes: int
    # The API's request threads share one ruleset cache, which is not thread-safe.
    _rulesets_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def stream(self, sub: Submission, result: StoredResult) -> Iterator[bytes]:
        """The report's stored bytes (gzip, or plain JSON if an early version stored it), in
        pieces; made and stored first if the worker left it to be asked for."""
        try:
            return self.blobs.stream(result.report_key)
        except BlobNotFound:
            if not report_blobs.deferrable(sub.size, self.max_report_bytes):
                raise  # the worker stores every other report: it is gone (a 404, as ever)
        packed = self.make(sub, result)
        return (packed[start : start + _PIECE] for start in range(0, len(packed), _PIECE))

    def make(self, sub: Submission, result: StoredResult) -> bytes:
        """Judge the upload again under the ruleset the result's report key names and store the
        report under that key (two first reads at once store the same bytes)."""
        contest = self.store.get_contest(sub.contest_id)
        if contest is None:
            raise NotFound(f"contest {sub.contest_id} is gone")
        played = game(contest.game)
        ruleset = report_ruleset(result.report_key, sub.id)
        if ruleset is None:
            raise ReportUnavailable(f"the report of {sub.id} is not stored under a ruleset's key")
        try:
            with self._rulesets_lock:
                lexicon = self.rulesets.lexicon(ruleset[0])
                rules = self.rulesets.rules(contest.game, ruleset[1])
        except (BlobNotFound, UnknownRuleset) as exc:
            raise ReportUnavailable(
                f"the report of {sub.id} cannot be made: its ruleset is no longer stored ({exc})"
            ) from exc
        try:
            data = read_upload(self.blobs, sub)
        except (BlobNotFound, UploadCorrupt) as exc:
            raise ReportUnavailable(
                f"the report of {sub.id} cannot be made: its upload is gone or damaged"
            ) from exc
        judged = played.judge(data, lexicon, rules, result.report_key)
        if not _same(judged.result, result, ruleset):
            log.error(
                "report.judge_differs", submission=sub.id, recorded=result.judge_version,
                running=judged.result.judge_version,
            )  # fmt: skip
            raise ReportUnavailable(
                f"the result of {sub.id} was recorded by judge version {result.judge_version}, "
                f"and this server's judge ({judged.result.judge_version}) finds otherwise: "
                "rejudge the contest to have its report"
            )
        packed = packed_report(sub, judged, self.max_report_bytes)
        self.blobs.put(
            result.report_key, packed, report_blobs.CONTENT_TYPE, report_blobs.CONTENT_ENCODING
        )
        if self.store.get_submission(sub.id) is None:  # its team deleted meanwhile
            self.blobs.delete(result.report_key)
        return packed


def _same(judged: JudgedResult, recorded: StoredResult, ruleset: tuple[str, str]) -> bool:
    """Whether judging again found what was recorded: under the ruleset its key names (a
    result carried over to another list keeps the numbers, and the report, of that one), by
    the same judge version, to the same score (its game's own fields, kept in its game's
    rows, follow from those)."""
    found = (judged.lexicon_id, judged.rules_id, judged.judge_version, judged.score)
    return found == (*ruleset, recorded.judge_version, recorded.score)
