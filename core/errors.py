"""What the use cases and the adapters raise, by meaning; the edges map them (HTTP statuses in
`api.errors`, retries in `workers`). No HTTP here."""

from __future__ import annotations


class CoreError(Exception):
    """Base of the pipeline's own errors; the message is for the person who asked."""


class NotFound(CoreError, LookupError):
    """No such thing (contest, team, submission, run, word list, layout)."""


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


class RejudgeRefused(Conflict):
    """A rejudge request that cannot be carried out as asked (the message says why)."""


class Throttled(CoreError):
    """Too many requests from one caller; `retry_after` says when to try again (seconds)."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Unavailable(CoreError, RuntimeError):
    """A service the pipeline needs could not be reached or refused the request: retry later.
    Nothing was half done."""


class StoreUnavailable(Unavailable):
    """The results store (SQL) is down or failed the transaction."""


class BlobStoreUnavailable(Unavailable):
    """The blob store (S3) could not be reached or refused the request."""


class PublishFailed(Unavailable):
    """The broker did not take the message; the sweeper will publish it later."""


class BlobNotFound(NotFound, KeyError):
    """No object under that key."""


class UnknownRuleset(NotFound):
    """A word list or layout id that is not registered (or whose blob is gone)."""
