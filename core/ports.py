"""The ports the use cases are written against: small Protocols, implemented in `infra` (S3,
SQL, Celery, Redis) and, for unit tests, by the in-memory fakes in `core.fakes`.

Adapters raise the errors of `core.errors` (`Unavailable` for an outage, `Duplicate` for a
unique key), never their driver's."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from core.clics import ContestData
from core.clics_feed import Logged, Read, Wanted
from core.disputes import DisputeStore
from core.errors import CoreError
from core.game import Rules
from core.messages import Upload
from core.records import (
    Claim,
    Contest,
    DeletedTeam,
    JudgedResult,
    Paged,
    ResultLine,
    RulesData,
    Run,
    RunFailure,
    RunSummary,
    StoredResult,
    Submission,
    Team,
    WordList,
)
from core.transparency import LogHead
from judge import Lexicon


class BlobStore(Protocol):
    """Uploads, word lists and reports, by key (S3)."""

    def put(
        self,
        key: str,
        data: bytes,
        content_type: str = "application/octet-stream",
        content_encoding: str | None = None,
    ) -> None: ...
    def get(self, key: str) -> bytes: ...  # BlobNotFound when there is no such key
    # The object in pieces: found (or BlobNotFound) on the call, read as the pieces are taken.
    def stream(self, key: str) -> Iterator[bytes]: ...
    def delete(self, key: str) -> None: ...
    def ping(self) -> None: ...


class UploadCache(Protocol):
    """Uploads' bytes a worker host has judged or read, by their SHA-256 (on its disk:
    `infra.upload_cache`), so a rejudge on that host need not read them from S3 again. Never
    authoritative: what `get` gives is checked against the digest before it is judged, and
    neither call raises (a failure is a miss). `host`: the id of the host holding it, which
    a rejudge sends the batches of its uploads to (`core.rejudging`); None keeps nothing."""

    @property
    def host(self) -> str | None: ...
    def get(self, sha256: str) -> bytes | None: ...
    def put(self, sha256: str, data: bytes) -> None: ...


class PublishBatch(Protocol):
    """Sends a rejudge batch (`Publisher.publish_batch`)."""

    def __call__(
        self, run_id: str, submission_ids: list[str], held_on: str | None = None
    ) -> None: ...


class Publisher(Protocol):
    """Work to the broker; PublishFailed when it does not take it."""

    def publish(self, submission_id: str, data: bytes | None = None) -> None: ...
    # priority above 0: heavy uploads, judged only in a heavy slot (core.tuning.HEAVY_BYTES)
    def publish_group(
        self, uploads: Sequence[Upload], spread: int = 1, priority: int = 0
    ) -> None: ...
    # A rejudge batch, to the queue of `held_on` (the host holding its uploads) where it can.
    def publish_batch(
        self, run_id: str, submission_ids: list[str], held_on: str | None = None
    ) -> None: ...
    def start_rejudge(self, run_id: str) -> None: ...
    def preload(self, lexicon_ids: list[str]) -> None: ...
    # Every worker host's upload cache drops these uploads' bytes (a team's deletion).
    def forget_uploads(self, digests: list[str]) -> None: ...


class QueueProbe(Protocol):
    """How many judge messages wait on the live queue; None when that cannot be told."""

    def __call__(self) -> int | None: ...


class SubmissionStore(Protocol):
    """The results store as intake, judging and the sweeper use it (one transaction a call)."""

    def get_contest(self, contest_id: str) -> Contest | None: ...
    def get_team(self, team_id: str) -> Team | None: ...
    def get_submission(self, submission_id: str) -> Submission | None: ...
    def find_same(
        self, contest_id: str, team_id: str, sha256: str, game_key: str | None = None
    ) -> Submission | None: ...
    def copy_of(self, submission_id: str, team_id: str) -> str | None: ...
    # Each upload back as stored, None for bytes its team sent already (for a game log: any
    # team), or the error refusing it: Closed when its contest closed before it was received,
    # NotAllowed when its team may not upload game logs.
    def store_submissions(
        self, batch: Sequence[Submission], queued: Sequence[Submission] = ()
    ) -> list[Submission | CoreError | None]: ...
    # Where writers take turns (SQLite), the turn held across a gather and its writes, so that
    # what arrives while waiting for it joins the group; reentrant within a thread.
    def writer_turn(self) -> AbstractContextManager[None]: ...
    def mark_queued(self, submission_id: str) -> bool: ...
    def mark_queued_many(self, submission_ids: Sequence[str]) -> list[str]: ...
    def needing_attention(
        self, *, stored_for: float, queued_for: float | None, judging_for: float
    ) -> list[Submission]: ...
    def requeue(self, seen: Submission) -> bool: ...
    def claim_many(self, submission_ids: Sequence[str], stale_after: float) -> list[Claim]: ...
    # `held_on`: this worker host's id, recorded as the holder of the bytes (`Paged.held_on`).
    def record_results(
        self, judged: Sequence[tuple[Claim, JudgedResult, bytes]], held_on: str | None = None
    ) -> set[str]: ...
    def release(self, claim: Claim, error: str, give_up: bool) -> None: ...
    def add_lexicon(
        self,
        *,
        id: str,
        name: str,
        words: int,
        size: int,
        blob_key: str,
        source: str,
        created_by: str,
    ) -> WordList: ...


class RejudgeStore(Protocol):
    """Rejudge runs as the producer, the batches and the sweeper use them."""

    def get(self, run_id: str) -> Run | None: ...
    def open_runs(self, contest_id: str | None = None) -> list[Run]: ...
    def page(self, run: Run, limit: int) -> Iterator[Paged]: ...
    def advance(self, run_id: str, cursor: str) -> bool: ...
    def restart_producer(self, run_id: str) -> None: ...
    def carry(self, run: Run, submission_ids: list[str]) -> int: ...
    # Results judged for a run and the uploads it could not judge (by id, a reason code), in
    # one transaction with its progress; how many were new (a failure counts as done).
    # `held_on`: the judging host's id, now a holder of the judged ones' bytes.
    def record_batch(
        self,
        run: Run,
        batch: list[tuple[str, JudgedResult]],
        words: Mapping[str, bytes] | None = None,
        failed: Mapping[str, str] | None = None,
        held_on: str | None = None,
    ) -> int: ...
    # Those with neither a result under the run's ruleset nor a failure recorded for the run.
    def without_result(self, run: Run, submission_ids: list[str]) -> list[Submission]: ...
    def stalled(self, older_than: float) -> list[Run]: ...


class Rulesets(Protocol):
    """Word lists and each game's rules data (layouts, boards) by id, loaded once and shared
    (UnknownRuleset when not known)."""

    def lexicon(self, lexicon_id: str) -> Lexicon: ...
    def rules(self, game_name: str, rules_id: str) -> Rules: ...
    def diff(self, older_id: str, newer_id: str) -> tuple[frozenset[str], frozenset[str]]: ...


# -- what the API's routes use: the results store by concern, and rejudge runs -----------------


class ContestStore(Protocol):
    def create_contest(self, contest: Contest) -> Contest: ...  # Duplicate for a used id
    def get_contest(self, contest_id: str) -> Contest | None: ...
    def list_contests(self) -> list[Contest]: ...
    # (the contest, whether it was still to close); None if there is no such contest
    def close_contest(self, contest_id: str, by: str) -> tuple[Contest, bool] | None: ...
    # (the contest, whether this call thawed it: false if thawed already or without a
    # freeze); None if there is no such contest
    def thaw_contest(self, contest_id: str, by: str) -> tuple[Contest, bool] | None: ...


class TeamStore(Protocol):
    def create_team(self, team: Team) -> Team: ...
    def get_team(self, team_id: str) -> Team | None: ...
    def team_by_token_hash(self, token_hash: str) -> Team | None: ...
    def team_with_contest(self, token_hash: str) -> tuple[Team, Contest] | None: ...
    def contest_teams(self, contest_id: str) -> list[Team]: ...
    def team_names(self, contest_id: str) -> dict[str, str]: ...
    def allow_logs(self, team_id: str, allowed: bool, by: str) -> Team | None: ...
    def delete_team(self, team_id: str, by: str) -> DeletedTeam: ...


class RulesetStore(Protocol):
    """Word lists and each game's rules data, as registered."""

    def find_lexicon(self, id_or_name: str) -> WordList | None: ...
    def all_lexicons(self) -> list[WordList]: ...
    def add_rules(
        self, *, id: str, name: str, content: str, created_by: str, game: str
    ) -> RulesData: ...
    def find_rules(self, id_or_name: str, game: str | None = None) -> RulesData | None: ...
    def all_rules(self, game: str | None = None) -> list[RulesData]: ...


class ResultReads(Protocol):
    """Results as the API shows them: each in its game's own fields, and a contest's standings
    in its game's own shape."""

    def current_result(self, submission_id: str) -> StoredResult | None: ...
    def result_fields(self, game: str, result_ids: Sequence[int]) -> dict[int, dict[str, Any]]: ...
    # Under the live ruleset or the one given; with `before`, of the uploads received before
    # then alone, and how many came since (`pending`): the public's while frozen.
    def standings(
        self,
        contest: Contest,
        ruleset: tuple[str, str] | None = None,
        before: str | None = None,
    ) -> dict[str, Any]: ...
    def results_page(
        self, contest_id: str, after: str, limit: int, team_id: str | None = None
    ) -> list[ResultLine]: ...
    def events_after(self, after: int, limit: int) -> list[dict[str, Any]]: ...


class ClicsReads(Protocol):
    """What the CLICS Contest API reads (`core.clics`, `core.clics_feed`): its contests, one
    contest whole, and for the event feed pages of the event log with what rendering a page
    needs of each contest it touches (`infra.sql.clics.ClicsReader`)."""

    def contests(self) -> list[Contest]: ...  # those of a game the Contest API maps, by id
    def contest(self, contest_id: str) -> ContestData | None: ...
    def last_event(self) -> int: ...
    def logged_after(
        self, after: int, limit: int, contest_id: str | None = None
    ) -> list[Logged]: ...
    def reads_for(self, wants: dict[str, Wanted], now: str) -> dict[str, Read]: ...


class TransparencyLogs(Protocol):
    """Each contest's transparency log (`core.transparency`): sequenced and signed, and read
    as tiles, entries and a submission's leaves."""

    def sequence(self, sign: Callable[[str, int, bytes], str]) -> int: ...
    def log_head(self, contest_id: str) -> LogHead | None: ...
    def log_hashes(self, contest_id: str, indexes: Sequence[int]) -> list[bytes]: ...
    # Leaves first..first+count-1, and the first sealed one (hidden while the contest is frozen).
    def log_entries(
        self, contest_id: str, first: int, count: int
    ) -> tuple[list[bytes], int | None]: ...
    def log_leaves(self, submission_id: str) -> list[tuple[int, str, str | None]]: ...
    def log_leaves_of(
        self, submission_ids: Sequence[str]
    ) -> dict[str, list[tuple[int, str, str | None]]]: ...  # `log_leaves` of each, one read


class SessionStore(Protocol):
    """Dashboard sessions signed out before they expire."""

    def revoke_session(self, session_id: str, expires_at: str) -> None: ...
    def session_revoked(self, session_id: str) -> bool: ...


class Caches(Protocol):
    """What is remembered beside the store, to be forgotten when a write changes it: the API
    processes' memory of a team's token and their shared public reads of a contest, and the
    broker's copies of uploads' bytes. Implemented by the API (`api.services.ApiCaches`)."""

    def forget_team(self, team_id: str) -> None: ...  # its tokens, in every API process
    # Its teams' tokens in this process (the others learn it at their next upload's commit).
    def forget_contest(self, contest_id: str) -> None: ...
    # What shows the contest's standings or ruleset (this process at once, the others soon).
    def forget_standings(self, contest_id: str) -> None: ...
    def forget_broker_copies(self, submission_ids: Sequence[str]) -> None: ...


class NewsSubscription(Protocol):
    """What is told on a `TeamNews` channel while the subscription is held."""

    # The next news, or None if none came within `timeout` seconds; Unavailable once the
    # subscription is lost (news told meanwhile may be missed).
    def next(self, timeout: float) -> str | None: ...


class TeamNews(Protocol):
    """A channel every API process hears, for news of team tokens to forget (`api.token_news`);
    over Redis publish/subscribe (`infra.team_news`). Unavailable when it cannot be told or
    heard."""

    def tell(self, news: str) -> None: ...
    # Entered once subscribed (within `timeout` seconds, else Unavailable): from then on
    # nothing told is missed while it is held.
    def subscribe(self, timeout: float) -> AbstractContextManager[NewsSubscription]: ...


class ApiStore(
    SubmissionStore,
    ContestStore,
    TeamStore,
    RulesetStore,
    ResultReads,
    SessionStore,
    TransparencyLogs,
    DisputeStore,
    Protocol,
):
    """Everything the API's routes and services ask of the results store."""

    def ping(self) -> None: ...  # StoreUnavailable when it cannot answer


class RejudgeRuns(RejudgeStore, Protocol):
    """Rejudge runs as the organiser drives them too: start, list, preview, apply, cancel."""

    def start(
        self, contest_id: str, lexicon_id: str, rules_id: str, mode: str, by: str
    ) -> tuple[Run, bool]: ...
    def list_runs(self, contest_id: str) -> list[Run]: ...
    # The preview's two lists over the data as it is now.
    def changes(self, run: Run) -> list[dict[str, Any]]: ...
    def rank_changes(self, run: Run) -> list[dict[str, Any]]: ...
    # What the run changes: for an applied run the summary `apply` recorded (None if it was
    # applied before summaries were kept); for a ready or cancelled run the preview of the
    # data as it is now; None while the run is running (ranks over a half-judged contest
    # would mislead).
    def summary(self, run: Run) -> RunSummary | None: ...
    # How many submissions the run could not judge, and the first `limit` of them by id.
    def failures(self, run: Run, limit: int) -> tuple[int, list[RunFailure]]: ...
    # Switches the contest to the run's ruleset and records the run's summary, at once; the
    # submissions the run could not judge become failed, with their reason. RejudgeRefused
    # unless the run is ready with every submission done, checked under a lock on its row.
    def apply(self, run_id: str, by: str) -> Run: ...
    def cancel(self, run_id: str, by: str) -> Run: ...
