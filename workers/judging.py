"""Judging one submission: claim it, fetch its bytes, judge, store the report and the result.

A plain function, called by the Celery task and directly by tests.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

import structlog
from sqlalchemy.exc import DBAPIError, OperationalError

from infra import report_blobs
from infra.blobstore import BlobNotFound, BlobStore, BlobStoreUnavailable
from infra.sql.rejudges import RejudgeStore
from infra.sql.results import JudgedResult
from infra.sql.store import SqlStore, Submission
from judge import JUDGE_VERSION, Report, judge
from workers.rulesets import RulesetCache, UnknownRuleset
from workers.word_hashes import signature

log = structlog.get_logger("tilejudge.worker")

TRANSIENT = (BlobStoreUnavailable, OperationalError, DBAPIError, ConnectionError, TimeoutError)


class Outcome(StrEnum):
    JUDGED = "judged"
    SKIPPED = "skipped"  # judged already, or being judged by someone else
    LOST_CLAIM = "lost_claim"  # the sweeper handed it on while this attempt ran too long
    FAILED = "failed"


class RetryLater(Exception):
    """A transient failure: the attempt was released and should be retried with backoff."""


@dataclass
class WorkerDeps:
    store: SqlStore
    blobs: BlobStore
    rulesets: RulesetCache
    max_attempts: int
    claim_stale_after: float
    publish_batch: Callable[[str, list[str]], None]  # a rejudge batch to the bulk queue

    @property
    def rejudges(self) -> RejudgeStore:
        return RejudgeStore(self.store)


def report_key(submission_id: str, lexicon_id: str, layout_id: str) -> str:
    return f"reports/{submission_id}/{lexicon_id}-{layout_id}.json"


def judge_only(
    deps: WorkerDeps, sub: Submission, data: bytes, lexicon_id: str, layout_id: str
) -> tuple[JudgedResult, Report]:
    lexicon = deps.rulesets.lexicon(lexicon_id)
    layout = deps.rulesets.layout(layout_id)
    report = judge(data, lexicon, layout)
    key = report_key(sub.id, lexicon.id, layout.id)
    legal = report.legal  # counted once: a pass over every verdict
    result = JudgedResult(
        lexicon.id,
        layout.id,
        JUDGE_VERSION,
        report.total,
        legal,
        len(report.verdicts) - legal,
        report.tiles_placed,
        key,
    )
    return result, report


def store_report(deps: WorkerDeps, result: JudgedResult, sub: Submission, report: Report) -> None:
    """The full report to S3, before any SQL row points at it."""
    about = json.dumps({"submission": sub.id, "contest": sub.contest_id}, separators=(",", ":"))
    body = about[:-1].encode() + b"," + report.to_json_bytes()[1:]
    deps.blobs.put(
        result.report_key,
        report_blobs.pack(body),
        report_blobs.CONTENT_TYPE,
        report_blobs.CONTENT_ENCODING,
    )


def judge_and_store_report(
    deps: WorkerDeps, sub: Submission, data: bytes, lexicon_id: str, layout_id: str
) -> tuple[JudgedResult, Report]:
    result, report = judge_only(deps, sub, data, lexicon_id, layout_id)
    store_report(deps, result, sub, report)
    return result, report


def upload_bytes(deps: WorkerDeps, sub: Submission, inline: bytes | None = None) -> bytes:
    """The upload's bytes, checked against the SHA-256 taken at intake: what is judged is
    exactly what the team sent (a damaged read is retried like an outage)."""
    if inline is not None and hashlib.sha256(inline).hexdigest() == sub.sha256:
        return inline
    data = deps.blobs.get(sub.blob_key)
    if hashlib.sha256(data).hexdigest() != sub.sha256:
        raise BlobStoreUnavailable(f"S3 get {sub.blob_key}: bytes do not match their SHA-256")
    return data


def judge_submission(
    deps: WorkerDeps, submission_id: str, inline: bytes | None = None, take_over: bool = False
) -> Outcome:
    """Judge one submission; `inline` is the upload as carried in the message, if it was.

    Under the contest's live ruleset; then, for every open rejudge run of the contest, a batch
    of one goes to the bulk queue. The run counted the upload when it was stored and is not
    ready (so cannot be applied) before that batch is judged: no gap, and the team's result
    does not wait for a ruleset nobody sees yet. A batch lost on the way stalls the run, and
    the sweeper restarts its producer, which finds the upload without a result."""
    # Taking over a live attempt is safe: only the attempt holding the claim can record.
    claim = deps.store.claim(submission_id, stale_after=0 if take_over else deps.claim_stale_after)
    if claim is None:
        return Outcome.SKIPPED
    sub = claim.submission
    try:
        contest = deps.store.get_contest(sub.contest_id)
        if contest is None:
            raise UnknownRuleset(f"contest {sub.contest_id} is gone")
        data = upload_bytes(deps, sub, inline)
        result, report = judge_and_store_report(
            deps, sub, data, contest.lexicon_id, contest.layout_id
        )
        runs = deps.rejudges.open_runs(sub.contest_id)
        recorded = deps.store.record_result(claim, result, signature(report.words))
    except TRANSIENT as exc:
        give_up = claim.attempt >= deps.max_attempts
        _release(deps, claim, f"{type(exc).__name__}: {exc}", give_up)
        if give_up:
            return Outcome.FAILED
        raise RetryLater(str(exc)) from exc
    except (BlobNotFound, UnknownRuleset) as exc:
        _release(deps, claim, f"{type(exc).__name__}: {exc}", give_up=True)
        return Outcome.FAILED
    if not recorded:
        return Outcome.LOST_CLAIM
    for run in runs:
        try:
            deps.publish_batch(run.id, [sub.id])
        except Exception as exc:  # the run stalls, and the sweeper restarts its producer
            log.warning("worker.rejudge_batch_unpublished", rejudge=run.id, error=str(exc))
    return Outcome.JUDGED


def _release(deps: WorkerDeps, claim: object, error: str, give_up: bool) -> None:
    try:
        deps.store.release(claim, error, give_up)  # type: ignore[arg-type]
    except TRANSIENT:
        # SQL is down too: the claim goes stale and the sweeper hands the submission on.
        log.warning("worker.release_failed", error=error)
