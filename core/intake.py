"""Taking an upload: deadline by the server's receipt time, the team's storage quota, then S3,
then SQL, then the queue.

The order is what makes an acknowledged upload impossible to lose: the bytes are durable before
the row that points at them, the row (with its event) before the 202, and the queue message is
only an optimisation the sweeper repeats if it is missing.
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import structlog

from core import clock, receipts
from core.errors import Closed, Duplicate, NotAllowed, NotAuthenticated
from core.games import game
from core.group_commit import GroupCommit
from core.ports import BlobStore, Publisher, SubmissionStore
from core.quota import StorageQuota
from core.records import Contest, Submission, Team
from core.states import SubmissionState

log = structlog.get_logger("tilejudge.intake")
T = TypeVar("T")

# What an upload is stored as in S3: the bytes its team sent, as they were sent. Not a text/*
# type, nor application/octet-stream (whose bytes SeaweedFS sniffs, and finds text): SeaweedFS
# gzips what it takes for text, on every PUT (and unpacks it on every GET): about 0.75 ms of its
# CPU a 51 KB upload stored and 0.4 ms a read, at the deadline, to save disk space
# (`python -m benchmarks.s3_calls --size 51000 --content-type text/plain`, then without).
UPLOAD_CONTENT_TYPE = "application/vnd.tilejudge.upload"

# Runs a blocking call off the event loop (the API passes Starlette's thread pool).
Offload = Callable[..., Awaitable[Any]]


def closed(contest_id: str, closes_at: str, received_at: str) -> Closed:
    """The refusal of an upload received after its contest closed (403 at the edge)."""
    return Closed(f"contest {contest_id} closed at {closes_at}; received at {received_at}")


def check_opened(contest: Contest, received_at: str) -> None:
    if received_at < contest.opens_at:
        raise Closed(f"contest {contest.id} opens at {contest.opens_at}; received at {received_at}")


def no_log_right(team_id: str, contest_id: str) -> NotAllowed:
    """The refusal of a game log from a team the organiser has not allowed to upload them (403
    at the edge): a log names other players, so who may send one is the organiser's call."""
    return NotAllowed(
        f"team {team_id} may not upload game logs to contest {contest_id}: a log names other "
        "players, so the organiser allows each team that may (PATCH /v1/teams/{id} with "
        '{"uploads_logs": true}, or `tilejudge team add --uploads-logs`)'
    )


def may_upload(team: Team, contest: Contest) -> bool:
    """Whether the team may upload to its contest, as far as `team` says: a contest whose
    uploads name other players takes them only from teams allowed to upload logs."""
    return team.uploads_logs or not game(contest.game).shared_uploads


@dataclass
class Intake:
    store: SubmissionStore
    blobs: BlobStore
    publisher: Publisher
    receipt_key: str
    commits: GroupCommit  # publishing: it stores, then publishes and marks queued
    offload: Offload = asyncio.to_thread
    # Charged before the bytes go to S3, given back for bytes deleted again.
    quota: StorageQuota = field(default_factory=StorageQuota.off)

    def __post_init__(self) -> None:
        if not self.commits.publishes:
            raise ValueError("intake needs a group commit that publishes what it stores")

    async def accept_late(
        self, team: Team, contest: Contest, data: bytes, received_at: str
    ) -> Submission:
        """After the deadline only what the contest holds already is answered: bytes this team
        uploaded in time (the answer to them lost, say) get their submission back, as before
        the deadline, and so does a game already in the contest, whoever sent it (this team's
        copy kept, as before the deadline); anything new is refused (Closed) and nothing is
        stored."""
        sha256 = hashlib.sha256(data).hexdigest()
        key = game(contest.game).identity(data).key
        existing: Submission | None = await self.offload(
            self.store.find_same, contest.id, team.id, sha256, key
        )
        if existing is None:
            raise closed(contest.id, contest.closes_at, received_at)
        if existing.shared and existing.team_id != team.id:
            copied, _ = await self.accept(team, contest, data, received_at)
            return copied
        return existing

    async def accept(
        self, team: Team, contest: Contest, data: bytes, received_at: str
    ) -> tuple[Submission, bool]:
        """Store and queue an upload; (submission, created). Same bytes again: the same one back.

        Closed if the contest closed before `received_at`: the group's transaction reads the
        contest's row, so a contest closed early is closed at once in every API process,
        whatever `contest` (remembered for a while) still says; a retry of bytes received in
        time still gets its submission back. Throttled (429) if the bytes would take the team
        over its storage quota for the day; nothing is stored then. The S3 write (and whatever
        else blocks) is offloaded to a thread; the wait for the group's commit does not hold
        one."""
        submission = await self.offload(self._write, team, contest, data, received_at)
        try:
            stored = await self.commits.stored(submission, data)
            if stored is None:
                raise Duplicate("the same bytes were uploaded already")
        except Duplicate:
            # The team sent these bytes before (or twice at once): the first row wins. (The
            # refusal may also be the team's row gone: deleted while its upload was taken.)
            return await self.offload(self._same_bytes, team, submission), False
        except Exception:
            await self.offload(self._forget, submission)
            raise
        return stored, True

    def _write(self, team: Team, contest: Contest, data: bytes, received_at: str) -> Submission:
        """The upload's bytes to S3, charged to the team's quota, and its row-to-be with a
        signed receipt."""
        sha256 = hashlib.sha256(data).hexdigest()
        identity = game(contest.game).identity(data)
        # No look for the same bytes first: the insert finds them (a retried upload is rare, a
        # query on every upload is not), and the bytes just written are then deleted again.
        submission_id = uuid.uuid4().hex
        key = f"uploads/{contest.id}/{team.id}/{submission_id}"
        self.quota.charge(team.id, len(data), received_at)
        try:
            self.blobs.put(key, data, UPLOAD_CONTENT_TYPE)
        except Exception:
            self.quota.refund(team.id, len(data), received_at)
            raise
        receipt = receipts.sign(
            self.receipt_key,
            submission=submission_id,
            team=team.id,
            contest=contest.id,
            sha256=sha256,
            received_at=received_at,
        )
        return Submission(
            id=submission_id,
            contest_id=contest.id,
            team_id=team.id,
            sha256=sha256,
            size=len(data),
            blob_key=key,
            received_at=received_at,
            receipt=receipt,
            state=SubmissionState.STORED,
            state_at=clock.now(),
            attempts=0,
            judged_at=None,
            failure=None,
            game_key=identity.key,
            match_key=identity.match,
        )

    def _same_bytes(self, team: Team, refused: Submission) -> Submission:
        """The submission `refused` is already, whose bytes are deleted again unless they are
        kept as the team's copy of a shared one."""
        winner = self.store.find_same(refused.contest_id, team.id, refused.sha256, refused.game_key)
        kept = (
            winner is not None
            and winner.shared
            and (self.store.copy_of(winner.id, team.id) == refused.blob_key)
        )
        if not kept:
            self.quota.refund(refused.team_id, refused.size, refused.received_at)
            try:
                self.blobs.delete(refused.blob_key)
            except Exception as exc:  # an orphan object, not a failed upload
                log.warning("intake.orphan_upload", key=refused.blob_key, error=str(exc))
        if winner is not None:
            return winner
        if self.store.get_team(team.id) is None:  # deleted since its token was checked
            raise NotAuthenticated("unknown token: the team was deleted")
        raise Duplicate("the same bytes were uploaded already")

    def _forget(self, refused: Submission) -> None:
        """Drop the bytes of an upload whose row was refused, once sure the row is not there,
        and give them back to the team's quota.

        A team's deletion finds its uploads through their rows, so an orphan would outlive it;
        but a commit whose answer was lost may have written the row, and then the bytes stay.
        """
        try:
            if self.store.get_submission(refused.id) is None:
                self.quota.refund(refused.team_id, refused.size, refused.received_at)
                self.blobs.delete(refused.blob_key)
                return
        except Exception as exc:
            log.warning("intake.orphan_upload", key=refused.blob_key, error=str(exc))
