"""A judged upload's report as the API serves it: the object the worker stored, or, for an upload
whose report the worker left to be asked for (`report_blobs.deferrable`), the report made on its
first read from the upload's bytes under the ruleset its key names (the result's own, or, for a
result carried over by an affected-only rejudge, the one it was first judged under), then stored
under that key so that every later read is a plain stream of the stored object.

A light upload's report is made by the API process that first reads it; a heavy upload's is asked
of a worker (`ReportAsks`), and the read is answered ReportPending until it is stored
(`AskedReports` makes it, in a worker's heavy slot).

A report is a pure function of the upload's bytes, the word list, the rules data and the judge:
the first three are kept by id, and the judge is checked by judging again. If what the running
judge finds differs from the recorded result (another judge version recorded it), no report is
made: a report is never wrong for the result it is served with.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

import structlog

from core import report_blobs
from core.errors import (
    BlobNotFound,
    Conflict,
    NotFound,
    ReportPending,
    UnknownRuleset,
    UploadCorrupt,
)
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


class ReportAsks(Protocol):
    """Heavy uploads' reports asked of the workers (`infra.report_asks`): at most one request
    pending for a submission, and a worker's refusal kept for a while for the reads to show."""

    # Asks unless a request is pending; the reason a worker refused the last one, if it did.
    def ask(self, submission_id: str) -> str | None: ...
    def refused(self, submission_id: str, reason: str) -> None: ...
    def done(self, submission_id: str) -> None: ...


ASKED_RETRY_AFTER_S = 2  # a heavy report takes a worker a second or a few


@dataclass
class Reports:
    """Where reports come from: the stored objects, and what making one again needs. Without
    `asks` (a stack with no broker, as in-process tests run), a heavy report is made here too."""

    store: ReportSources
    blobs: BlobStore
    rulesets: Rulesets
    max_report_bytes: int
    asks: ReportAsks | None = None
    # The API's request threads share one ruleset cache, which is not thread-safe.
    _rulesets_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def stream(self, sub: Submission, result: StoredResult) -> Iterator[bytes]:
        """The report's stored bytes (gzip, or plain JSON if an early version stored it), in
        pieces; made and stored first if the worker left it to be asked for, or, for a heavy
        upload, asked of a worker: ReportPending until one stored it, ReportUnavailable if
        the worker could not make it."""
        try:
            return self.blobs.stream(result.report_key)
        except BlobNotFound:
            if not report_blobs.deferrable(sub.size, self.max_report_bytes):
                raise  # the worker stores every other report: it is gone (a 404, as ever)
        if self.asks is not None and not report_blobs.made_by_reader(sub.size):
            refusal = self.asks.ask(sub.id)
            if refusal is not None:
                raise ReportUnavailable(refusal)
            raise ReportPending(
                f"the report of {sub.id} is being made; ask again in {ASKED_RETRY_AFTER_S} s",
                ASKED_RETRY_AFTER_S,
            )
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


@dataclass
class AskedReports:
    """What a worker runs for a report the API asked for (`ReportAsks`)."""

    reports: Reports
    current_result: Callable[[str], StoredResult | None]
    asks: ReportAsks

    def make(self, submission_id: str) -> str:
        """Make and store the report of the submission's current result, and tell the asks
        it is done; "made", "gone" (no submission or result any more: nothing to make) or
        "refused" (ReportUnavailable, kept for the reads to show). An outage raises, and the
        request is left to lapse: the next read asks again."""
        sub = self.reports.store.get_submission(submission_id)
        result = self.current_result(submission_id) if sub is not None else None
        if sub is None or result is None:
            self.asks.done(submission_id)
            return "gone"
        try:
            self.reports.make(sub, result)
        except (ReportUnavailable, NotFound, report_blobs.ReportTooLarge) as exc:
            log.warning("report.refused", submission=submission_id, error=str(exc))
            self.asks.refused(submission_id, str(exc))
            return "refused"
        self.asks.done(submission_id)
        return "made"


def _same(judged: JudgedResult, recorded: StoredResult, ruleset: tuple[str, str]) -> bool:
    """Whether judging again found what was recorded: under the ruleset its key names (a
    result carried over to another list keeps the numbers, and the report, of that one), by
    the same judge version, to the same score (its game's own fields, kept in its game's
    rows, follow from those)."""
    found = (judged.lexicon_id, judged.rules_id, judged.judge_version, judged.score)
    return found == (*ruleset, recorded.judge_version, recorded.score)
