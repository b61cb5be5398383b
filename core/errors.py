"""What the use cases and the adapters raise, by meaning; the edges map them (HTTP statuses in
`api.errors`, retries in `workers`). No HTTP here. Also the reason codes a failed submission
is recorded and shown with (`FailureReason`), each with its plain sentence."""

from __future__ import annotations

from enum import StrEnum


class CoreError(Exception):
    """Base of the pipeline's own errors; the message is for the person who asked."""


class NotFound(CoreError, LookupError):
    """No such thing (contest, team, submission, run, word list, rules data)."""


class Invalid(CoreError, ValueError):
    """The request or a value in it cannot be accepted as it is."""


class NotAuthenticated(CoreError):
    """The caller could not be identified (an unknown or revoked token, a deleted team)."""


class NotAllowed(CoreError):
    """The caller is known but may not do this."""


class Closed(NotAllowed):
    """The contest is not open at the server's receipt time."""


class Conflict(CoreError):
    """The request clashes with the current state (a rejudge already applied, say)."""


class Duplicate(Conflict):
    """A row with that unique key exists already (or a row it refers to is gone)."""


class MissingReference(Duplicate):
    """A row it refers to is not there (a foreign key): refused as a used key is, and said so."""


class RejudgeRefused(Conflict):
    """A rejudge request that cannot be carried out as asked (the message says why)."""


class AskAgain(CoreError):
    """An answer that says when to ask again: `retry_after`, in seconds (`Retry-After`)."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Throttled(AskAgain):
    """Too many requests from one caller."""


class ReportPending(AskAgain):
    """A report being made by a worker, asked for by this read (`core.reports`): not an error
    of the caller's, answered 202."""


class Unavailable(CoreError, RuntimeError):
    """A service the pipeline needs could not be reached or refused the request: retry later.
    Nothing was half done."""


class StoreUnavailable(Unavailable):
    """The results store (SQL) is down or failed the transaction."""


class BlobStoreUnavailable(Unavailable):
    """The blob store (S3) could not be reached or refused the request."""


class RulesetUnavailable(Unavailable):
    """The word list or rules data uploads are judged under cannot be loaded (its object gone
    from storage, say): a fault of the ruleset, not of any upload, so no upload fails for it;
    the work is retried, a bounded number of times, until it can be loaded again."""


class PublishFailed(Unavailable):
    """The broker did not take the message; the sweeper will publish it later."""


class BlobNotFound(NotFound, KeyError):
    """No object under that key."""


class UnknownRuleset(NotFound):
    """A word list or rules data id that is not registered (or whose blob is gone)."""


class UploadCorrupt(CoreError):
    """A stored upload whose bytes, read twice, do not match the SHA-256 taken at intake."""


class FailureReason(StrEnum):
    """Why a submission failed, as its team and the organiser see it: a code, with a plain
    sentence (`FAILURE_SENTENCES`). What the driver said stays in the logs."""

    UPLOAD_MISSING = "upload_missing"
    UPLOAD_CORRUPT = "upload_corrupt"
    REPORT_TOO_LARGE = "report_too_large"
    RULES_UNAVAILABLE = "rules_unavailable"
    RULES_INVALID = "rules_invalid"
    STORAGE_UNAVAILABLE = "storage_unavailable"
    DATABASE_UNAVAILABLE = "database_unavailable"
    SERVICE_UNAVAILABLE = "service_unavailable"
    NOT_RECORDED = "not_recorded"
    OUT_OF_ATTEMPTS = "out_of_attempts"
    JUDGING_FAILED = "judging_failed"


FAILURE_SENTENCES = {
    FailureReason.UPLOAD_MISSING: "The uploaded file could not be found in storage.",
    FailureReason.UPLOAD_CORRUPT: "The stored file does not match the bytes that were uploaded.",
    FailureReason.REPORT_TOO_LARGE: "The judge's report on this upload is over the size limit.",
    FailureReason.RULES_UNAVAILABLE: "The contest's word list or layout could not be loaded.",
    FailureReason.RULES_INVALID: "The contest's rules data could not be read.",
    FailureReason.STORAGE_UNAVAILABLE: "File storage was unavailable; judging was retried.",
    FailureReason.DATABASE_UNAVAILABLE: "The results database was unavailable; judging was retried.",
    FailureReason.SERVICE_UNAVAILABLE: "A service the judge needs was unavailable.",
    FailureReason.NOT_RECORDED: "The result could not be recorded.",
    FailureReason.OUT_OF_ATTEMPTS: "Judging did not finish within the allowed attempts.",
    FailureReason.JUDGING_FAILED: "This upload could not be judged.",
}


def failure_text(reason: FailureReason) -> str:
    """What a submission's `failure` holds: the code and its sentence, nothing else."""
    return f"{reason.value}: {FAILURE_SENTENCES[reason]}"


def read_failure(text: str | None) -> tuple[FailureReason, str] | None:
    """A stored `failure` as a code and its sentence. Text recorded before codes were (an
    exception's message, with its endpoint, key or constraint) reads as `judging_failed`:
    nothing of it is shown."""
    if text is None:
        return None
    reason = as_reason(text.split(":", 1)[0].strip())
    return reason, FAILURE_SENTENCES[reason]


def as_reason(code: str) -> FailureReason:
    """A stored reason code as the enum: what text recorded before codes began with (an
    exception's class) read as its code, anything else as `judging_failed`."""
    known = FailureReason._value2member_map_.get(code) or _BEFORE_CODES.get(code)
    return known if isinstance(known, FailureReason) else FailureReason.JUDGING_FAILED


# How a failure's text began before reason codes were recorded.
_BEFORE_CODES = {
    "BlobNotFound": FailureReason.UPLOAD_MISSING,
    "ReportTooLarge": FailureReason.REPORT_TOO_LARGE,
    "UnknownRuleset": FailureReason.RULES_UNAVAILABLE,
    "BlobStoreUnavailable": FailureReason.STORAGE_UNAVAILABLE,
    "StoreUnavailable": FailureReason.DATABASE_UNAVAILABLE,
    "out of attempts": FailureReason.OUT_OF_ATTEMPTS,
    "recording failed": FailureReason.NOT_RECORDED,
}
