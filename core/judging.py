"""Judging a group of submissions: claim them, fetch their bytes, judge, store the results (and
the reports of heavy uploads; a light upload's is made when first read, `core.reports`).

A plain function, called by the Celery task and directly by tests.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from typing import Any

import structlog

from core import report_blobs
from core.errors import (
    BlobNotFound,
    BlobStoreUnavailable,
    FailureReason,
    RulesetUnavailable,
    StoreUnavailable,
    Unavailable,
    UnknownRuleset,
    UploadCorrupt,
    failure_text,
)
from core.game import Judged
from core.games import game, names
from core.ports import (
    BlobStore,
    PublishBatch,
    RejudgeStore,
    Rulesets,
    SubmissionStore,
    UploadCache,
)
from core.records import Claim, Contest, JudgedResult, Run, Submission
from core.report_blobs import report_key
from core.word_hashes import signature

log = structlog.get_logger("tilejudge.worker")

# Outages: the work is released and retried later. Anything else is a bug or bad data.
TRANSIENT = (Unavailable, ConnectionError, TimeoutError)


def rules_errors() -> tuple[type[Exception], ...]:
    """Rules data (a layout, a board) that does not parse: judging it again cannot help."""
    return tuple(error for name in names() for error in game(name).rules_errors)


def upload_errors() -> tuple[type[Exception], ...]:
    """What fails one upload for good, live or in a rejudge, and no other: its bytes gone or
    damaged, its report over the cap, or the ruleset it is judged under unreadable."""
    return (
        BlobNotFound,
        UploadCorrupt,
        report_blobs.ReportTooLarge,
        UnknownRuleset,
        *rules_errors(),
    )


def reason_for(exc: BaseException) -> FailureReason:
    """The reason code a failure is recorded and shown with; the exception's own text (an
    endpoint, a bucket, a key, a constraint) goes to the logs only."""
    if isinstance(exc, BlobNotFound):
        return FailureReason.UPLOAD_MISSING
    if isinstance(exc, UploadCorrupt):
        return FailureReason.UPLOAD_CORRUPT
    if isinstance(exc, report_blobs.ReportTooLarge):
        return FailureReason.REPORT_TOO_LARGE
    if isinstance(exc, UnknownRuleset):
        return FailureReason.RULES_UNAVAILABLE
    if isinstance(exc, rules_errors()):
        return FailureReason.RULES_INVALID
    if isinstance(exc, RulesetUnavailable):
        return FailureReason.RULES_UNAVAILABLE
    if isinstance(exc, BlobStoreUnavailable):
        return FailureReason.STORAGE_UNAVAILABLE
    if isinstance(exc, StoreUnavailable):
        return FailureReason.DATABASE_UNAVAILABLE
    if isinstance(exc, TRANSIENT):
        return FailureReason.SERVICE_UNAVAILABLE
    return FailureReason.JUDGING_FAILED


class Outcome(StrEnum):
    JUDGED = "judged"
    SKIPPED = "skipped"  # judged already, or being judged by someone else
    LOST_CLAIM = "lost_claim"  # the sweeper handed it on while this attempt ran too long
    FAILED = "failed"


class NoUploadCache:
    """Keeps nothing: every read goes to the object store."""

    host = None

    def get(self, sha256: str) -> bytes | None:
        return None

    def put(self, sha256: str, data: bytes) -> None:
        pass


class RetryLater(Exception):
    """A transient failure: the attempts were released; `submission_ids` should be retried
    with backoff."""

    def __init__(self, error: str, submission_ids: Sequence[str] = ()) -> None:
        super().__init__(error)
        self.submission_ids = list(submission_ids)


@dataclass
class WorkerDeps:
    store: SubmissionStore
    rejudges: RejudgeStore
    blobs: BlobStore
    rulesets: Rulesets
    max_attempts: int
    claim_stale_after: float
    publish_batch: PublishBatch  # a rejudge batch to the bulk queue
    max_report_bytes: int = report_blobs.max_report_bytes(2 * 1024 * 1024)
    # Asks for the broker's copies of messages to be dropped (infra.broker_copies.forget_soon).
    forget_copies: Callable[[], None] = lambda: None
    # Light uploads' reports left to be made when first read (`report_deferred`); off, every
    # report is stored as it is judged.
    defer_reports: bool = True
    # Where the host keeps the uploads it judged or read, for a rejudge to read them again.
    upload_cache: UploadCache = field(default_factory=NoUploadCache)


def ruleset_ready(deps: WorkerDeps, game_name: str, lexicon_id: str, rules_id: str) -> None:
    """Load (or find loaded) the ruleset uploads are about to be judged under, so that a word
    list or rules data that cannot be had is told apart from a fault of one upload: it raises
    RulesetUnavailable, which retries the work instead of failing every upload for good."""
    try:
        deps.rulesets.lexicon(lexicon_id)
        deps.rulesets.rules(game_name, rules_id)
    except (BlobNotFound, UnknownRuleset) as exc:
        raise RulesetUnavailable(
            f"the ruleset {lexicon_id[:16]} / {rules_id[:16]} cannot be loaded: {exc}"
        ) from exc


def judge_only(
    deps: WorkerDeps,
    sub: Submission,
    data: bytes,
    game_name: str,
    lexicon_id: str,
    rules_id: str,
) -> Judged:
    """Judge the upload with its contest's game, under the given word list and rules data."""
    played = game(game_name)
    lexicon = deps.rulesets.lexicon(lexicon_id)
    rules = deps.rulesets.rules(game_name, rules_id)
    return played.judge(data, lexicon, rules, report_key(sub.id, lexicon.id, rules.id))


def report_deferred(deps: WorkerDeps, sub: Submission) -> bool:
    """A light upload's report is not built here: `core.reports` makes it from the same bytes
    and ruleset when it is first read (most never are), which spares every verdict its JSON,
    gzip and S3 PUT. A heavy upload's is stored now, as ever (the API never judges one)."""
    return deps.defer_reports and report_blobs.deferrable(sub.size, deps.max_report_bytes)


def packed_report(sub: Submission, judged: Judged, limit: int) -> bytes:
    """The report as it is stored, gzipped as it is serialised: the worker never holds the
    whole JSON. The same bytes whether stored now or when first read."""
    head = {"submission": sub.id, "contest": sub.contest_id}
    return report_blobs.pack_pieces(judged.report(head), limit)


def store_report(deps: WorkerDeps, sub: Submission, judged: Judged) -> None:
    """The full report to S3, before any SQL row points at it."""
    deps.blobs.put(
        judged.result.report_key,
        packed_report(sub, judged, deps.max_report_bytes),
        report_blobs.CONTENT_TYPE,
        report_blobs.CONTENT_ENCODING,
    )


def judge_and_store_report(
    deps: WorkerDeps, sub: Submission, data: bytes, contest: Contest
) -> Judged:
    """Judged under the contest's live ruleset, the report stored unless it is deferred."""
    judged = judge_only(deps, sub, data, contest.game, contest.lexicon_id, contest.rules_id)
    if not report_deferred(deps, sub):
        store_report(deps, sub, judged)
    return judged


def upload_bytes(deps: WorkerDeps, sub: Submission, inline: bytes | None = None) -> bytes:
    """`read_upload` from the worker's object store; kept in the host's upload cache, where a
    rejudge on this host finds it (`rejudged_bytes`)."""
    data = read_upload(deps.blobs, sub, inline)
    deps.upload_cache.put(sub.sha256, data)
    return data


def rejudged_bytes(deps: WorkerDeps, sub: Submission) -> bytes:
    """The upload's bytes for a rejudge: the host's upload cache's when they match the digest,
    else `upload_bytes`. Only a rejudge looks there, so a live upload whose object is gone
    still fails as missing, and its organiser learns of it."""
    kept = deps.upload_cache.get(sub.sha256)
    if kept is not None and hashlib.sha256(kept).hexdigest() == sub.sha256:
        return kept
    return upload_bytes(deps, sub)


def read_upload(blobs: BlobStore, sub: Submission, inline: bytes | None = None) -> bytes:
    """The upload's bytes, checked against the SHA-256 taken at intake: what is judged is
    exactly what the team sent. A mismatch is read once more (a read damaged on the way);
    twice, and the stored object is damaged: UploadCorrupt, which no retry mends."""
    if inline is not None and hashlib.sha256(inline).hexdigest() == sub.sha256:
        return inline
    for _ in range(2):
        data = blobs.get(sub.blob_key)
        if hashlib.sha256(data).hexdigest() == sub.sha256:
            return data
    raise UploadCorrupt(f"S3 get {sub.blob_key}: bytes do not match their SHA-256, read twice")


def judge_group(
    deps: WorkerDeps,
    submission_ids: Sequence[str],
    inline: Mapping[str, bytes] | None = None,
    take_over: bool = False,
    judging: Callable[[Callable[[], Any]], Any] = lambda work: work(),
) -> dict[str, Outcome]:
    """Judge the submissions of one message; `inline` holds the uploads carried in it.

    One transaction claims them all and one records their results: the broker's, the pool's
    and the SQL store's cost per message and per transaction is paid once for the group, while
    each upload keeps its own claim, attempts, events and outcome. Under each contest's live
    ruleset; then, for every open rejudge run of a contest, its judged uploads go to the bulk
    queue as a batch. The
    run counted the uploads when they were stored and is not ready (so cannot be applied)
    before that batch is judged: no gap, and no team's result waits for a ruleset nobody sees
    yet. A batch lost on the way stalls the run, and the sweeper restarts its producer, which
    finds the uploads without a result.

    `judging` runs each upload's judging and report writing (a heavy upload's on a thread that
    yields the CPU to light ones: `workers.scheduling.run_niced`); claims and recording stay on
    the calling thread, so a niced thread never holds a lock a light upload waits for.

    A transient failure (S3 or SQL out) stops the group: what was judged is recorded if it
    can be, the rest is released and `RetryLater` names it."""
    # Taking over a live attempt is safe: only the attempt holding the claim can record.
    stale_after = 0 if take_over else deps.claim_stale_after
    claims = deps.store.claim_many(submission_ids, stale_after=stale_after)
    outcomes = {sid: Outcome.SKIPPED for sid in submission_ids}
    claims = _within_attempts(deps, claims, outcomes)
    if inline:
        _forget_copies_of_deleted(deps, inline, {c.submission.id for c in claims})
    judged: list[tuple[Claim, JudgedResult, bytes]] = []
    contests: dict[str, Contest | None] = {}
    runs: dict[str, list[Run]] = {}
    failure: Exception | None = None
    unjudged: list[Claim] = []
    for_good = upload_errors()
    for n, claim in enumerate(claims):
        sub = claim.submission
        try:
            if sub.contest_id not in contests:
                found = deps.store.get_contest(sub.contest_id)
                if found is not None:  # once a contest a group: its live ruleset at hand
                    ruleset_ready(deps, found.game, found.lexicon_id, found.rules_id)
                contests[sub.contest_id] = found
            contest = contests[sub.contest_id]
            if contest is None:
                raise UnknownRuleset(f"contest {sub.contest_id} is gone")
            data = upload_bytes(deps, sub, (inline or {}).get(sub.id))
            judged_one = judging(partial(judge_and_store_report, deps, sub, data, contest))
            if sub.contest_id not in runs:
                runs[sub.contest_id] = deps.rejudges.open_runs(sub.contest_id)
        except TRANSIENT as exc:
            failure, unjudged = exc, claims[n:]
            break
        except for_good as exc:
            log.warning(
                "worker.upload_failed", submission=sub.id, reason=reason_for(exc).value,
                error=f"{type(exc).__name__}: {exc}",
            )  # fmt: skip
            _release(deps, claim, failure_text(reason_for(exc)), give_up=True)
            outcomes[sub.id] = Outcome.FAILED
            continue
        judged.append((claim, judged_one.result, signature(judged_one.words)))
    try:
        _record(deps, judged, outcomes, runs)
    except TRANSIENT as exc:
        unrecorded = [c for c, _, _ in judged if outcomes[c.submission.id] == Outcome.SKIPPED]
        failure, unjudged = exc, unrecorded + unjudged
    if failure is None:
        return outcomes
    retry = _retry_later(deps, unjudged, failure, outcomes)
    if retry.submission_ids:
        raise retry from failure
    return outcomes  # every one of them out of attempts: failed for good


def _record(
    deps: WorkerDeps,
    judged: list[tuple[Claim, JudgedResult, bytes]],
    outcomes: dict[str, Outcome],
    runs: dict[str, list[Run]],
) -> None:
    """Record the judged ones in one transaction, then hand them to open rejudge runs.

    A transaction refused for anything but an outage (a value the database cannot hold, say)
    is tried again one upload at a time, so one bad result fails only its own upload."""
    if not judged:
        return
    try:
        recorded = deps.store.record_results(judged, deps.upload_cache.host)
    except TRANSIENT:
        raise
    except Exception:
        recorded = _record_one_by_one(deps, judged, outcomes)
    by_contest: dict[str, list[str]] = {}
    unrecorded: list[tuple[str, str]] = []
    for claim, result, _ in judged:
        sub = claim.submission
        if outcomes[sub.id] == Outcome.FAILED:
            continue
        outcomes[sub.id] = Outcome.JUDGED if sub.id in recorded else Outcome.LOST_CLAIM
        if sub.id in recorded:
            by_contest.setdefault(sub.contest_id, []).append(sub.id)
        else:
            unrecorded.append((sub.id, result.report_key))
    drop_reports_of_deleted(deps, unrecorded)
    for contest_id, ids in by_contest.items():
        for run in runs.get(contest_id, []):
            try:
                deps.publish_batch(run.id, ids, deps.upload_cache.host)
            except Exception as exc:  # the run stalls, and the sweeper restarts its producer
                log.warning("worker.rejudge_batch_unpublished", rejudge=run.id, error=str(exc))


def drop_reports_of_deleted(deps: WorkerDeps, written: Sequence[tuple[str, str]]) -> None:
    """Delete the reports just written for submissions that are gone: their team was deleted
    while they were judged, after its deletion removed what it could find. (A report of one
    that still exists is left alone: another attempt holds its claim and writes the same key.)
    Best effort: a report that cannot be deleted now is logged, with its key."""
    for submission_id, key in written:
        try:
            if deps.store.get_submission(submission_id) is None:
                deps.blobs.delete(key)
                log.info("worker.report_of_deleted_dropped", submission=submission_id)
        except Exception as exc:
            log.error(
                "worker.report_of_deleted_kept", submission=submission_id, key=key,
                error=str(exc),
            )  # fmt: skip


def _forget_copies_of_deleted(
    deps: WorkerDeps, inline: Mapping[str, bytes], claimed: set[str]
) -> None:
    """The message carried the bytes of a submission that is gone (its team was deleted): it
    is dropped unread, and the broker asked to forget its copies."""
    for submission_id in inline:
        if submission_id not in claimed and deps.store.get_submission(submission_id) is None:
            log.info("worker.upload_of_deleted_dropped", submission=submission_id)
            deps.forget_copies()
            return


def _record_one_by_one(
    deps: WorkerDeps,
    judged: list[tuple[Claim, JudgedResult, bytes]],
    outcomes: dict[str, Outcome],
) -> set[str]:
    """Each result in its own transaction; one that cannot be stored fails its upload for good
    (trying it again would fail the same way). An outage stops the pass: the ones recorded
    are marked JUDGED so that only the rest are released for a retry."""
    recorded: set[str] = set()
    for item in judged:
        claim = item[0]
        sub = claim.submission
        try:
            recorded |= deps.store.record_results([item], deps.upload_cache.host)
        except TRANSIENT:
            for done in recorded:
                outcomes[done] = Outcome.JUDGED
            raise
        except Exception as exc:
            error = f"recording failed: {type(exc).__name__}: {exc}"
            log.error("worker.recording_failed", submission=sub.id, error=error)
            _release(deps, claim, failure_text(FailureReason.NOT_RECORDED), give_up=True)
            outcomes[sub.id] = Outcome.FAILED
    return recorded


def _within_attempts(
    deps: WorkerDeps, claims: list[Claim], outcomes: dict[str, Outcome]
) -> list[Claim]:
    """Fail, without judging, each claim past `max_attempts`: an attempt that died without
    releasing its claim (a killed process, an error no handler knew) leaves it to the sweeper,
    and only this check stops that cycle."""
    within = []
    for claim in claims:
        if claim.attempt <= deps.max_attempts:
            within.append(claim)
            continue
        log.warning(
            "worker.out_of_attempts", submission=claim.submission.id,
            made=claim.attempt - 1, most=deps.max_attempts,
        )  # fmt: skip
        _release(deps, claim, failure_text(FailureReason.OUT_OF_ATTEMPTS), give_up=True)
        outcomes[claim.submission.id] = Outcome.FAILED
    return within


def _retry_later(
    deps: WorkerDeps, claims: Sequence[Claim], exc: Exception, outcomes: dict[str, Outcome]
) -> RetryLater:
    """Release the claims not recorded: each back to queued for a retry, or failed for good
    once out of attempts; the error to raise names the ones to retry. The submissions keep the
    outage's reason code; its text (an endpoint, a key, a driver's message) is logged."""
    error = f"{type(exc).__name__}: {exc}"
    shown = failure_text(reason_for(exc))
    log.warning("worker.retry_later", count=len(claims), error=error)
    again = []
    for claim in claims:
        give_up = claim.attempt >= deps.max_attempts
        _release(deps, claim, shown, give_up)
        if give_up:
            outcomes[claim.submission.id] = Outcome.FAILED
        else:
            again.append(claim.submission.id)
    return RetryLater(error, again)


def _release(deps: WorkerDeps, claim: Claim, error: str, give_up: bool) -> None:
    try:
        deps.store.release(claim, error, give_up)
    except TRANSIENT:
        # SQL is down too: the claim goes stale and the sweeper hands the submission on.
        log.warning("worker.release_failed", error=error)
