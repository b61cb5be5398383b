"""One holder at a time among many processes, on many hosts: a Redis lock with expiry (redis-py's
`Lock`: SET NX PX with a token of the holder's, renewed while held). What elects the sweeper."""

from __future__ import annotations

import os
import secrets
import socket
import threading
import time

import redis
import structlog
from redis.exceptions import LockError, RedisError

SWEEPER_LOCK = "tilejudge:sweeper"
# The holder's clock may run a little fast or slow against Redis's: its own idea of when the
# lock expires is this share of the TTL early.
CLOCK_DRIFT = 0.01
# A follower looks again no later than this after the lock's expiry.
EXPIRY_GRACE_S = 0.05
NO_SUCH_KEY = -2  # what PTTL answers for a key that is not there
NO_EXPIRY = -1  # what PTTL answers for a key that never expires
# A lock key found without an expiry (set by hand, or by anyone who reaches Redis) is given the
# lock's TTL, so it lapses like a holder that died: an unexpiring key would stop sweeping for
# good. Only a key still without one is touched, in one step: a real holder's always has one.
EXPIRE_IF_PERSISTENT = """
if redis.call('PTTL', KEYS[1]) == -1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return tonumber(ARGV[1])
end
return redis.call('PTTL', KEYS[1])
"""

log = structlog.get_logger("tilejudge.election")


def candidate_name() -> str:
    """Host, process and a random part: what the lock's value says about its holder."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


class Election:
    """Campaigns for the lock `key` in a thread of its own: takes it when it is free, renews it
    every third of `ttl` while it holds it, and gives it up on `stop`.

    `held()` is True only while the lock is surely this candidate's: from a successful take or
    renewal until the moment, measured from before the request, at which Redis lets it expire.
    A failed renewal (taken over, or Redis unreachable) makes it False at once. A holder that
    dies without `stop` keeps the lock until it expires, and a follower takes over then; a key
    found without an expiry is given one of `ttl`, and is taken over the same way."""

    def __init__(
        self,
        client: redis.Redis,
        key: str,
        ttl: float,
        *,
        candidate: str | None = None,
    ) -> None:
        self._client, self._key, self._ttl = client, key, ttl
        self.candidate = candidate or candidate_name()
        # Not thread-local: the campaign thread takes the lock and `stop` lets it go.
        self._lock = client.lock(key, timeout=ttl, thread_local=False)
        self._expire_persistent = client.register_script(EXPIRE_IF_PERSISTENT)
        self._valid_until = 0.0
        self._mine = False  # Redis may still hold this candidate's token
        self._holder: str | None = None  # the last holder reported in the log
        self._halt = threading.Event()
        self._thread = threading.Thread(target=self._campaign, name="tilejudge-election")
        self._thread.daemon = True

    @property
    def renew_every(self) -> float:
        return self._ttl / 3

    def start(self) -> None:
        self._thread.start()

    def held(self) -> bool:
        return time.monotonic() < self._valid_until

    def stop(self) -> None:
        """Stop campaigning and let the lock go, so a follower takes over at its next look."""
        self._halt.set()
        if self._thread.is_alive():
            self._thread.join()
        self._valid_until = 0.0
        if not self._mine:
            return
        self._mine = False
        try:
            self._lock.release()
        except (LockError, RedisError) as exc:  # lost it already, or it expires on its own
            log.warning("election.release_failed", key=self._key, error=str(exc))
            return
        log.info("election.resigned", key=self._key, candidate=self.candidate)

    def campaign_once(self) -> float:
        """Take or renew the lock once; returns how long to wait before the next try."""
        started = time.monotonic()
        try:
            if (self._mine and self._renewed()) or self._lock.acquire(
                blocking=False, token=self.candidate
            ):
                self._mine = True
                self._valid_until = started + self._ttl * (1 - CLOCK_DRIFT)
                self._report(self.candidate)
                return self.renew_every
            holder, expires_in_ms = self._holder_and_expiry()
            if expires_in_ms == NO_EXPIRY and holder != self.candidate:
                log.warning("election.lock_without_expiry", key=self._key, holder=holder)
                expires_in_ms = int(
                    self._expire_persistent(keys=[self._key], args=[int(self._ttl * 1000)])
                )
        except RedisError as exc:
            if self._valid_until or self._holder is not None:
                log.warning("election.redis_unavailable", key=self._key, error=str(exc))
            self._valid_until, self._holder = 0.0, None
            return self.renew_every
        if holder == self.candidate:
            # A take whose answer was lost on the way: the lock is this candidate's, and the
            # next try renews it.
            self._lock.local.token = holder.encode()
            self._mine = True
            return 0.0
        self._report(holder)
        if expires_in_ms == NO_SUCH_KEY:
            return EXPIRY_GRACE_S  # let go since the try: look again at once
        if expires_in_ms < 0:
            return EXPIRY_GRACE_S  # gone since the look (or never expiring still): look again
        return min(self.renew_every, expires_in_ms / 1000 + EXPIRY_GRACE_S)

    def _renewed(self) -> bool:
        """False when another candidate holds the lock by now; RedisError when Redis cannot say."""
        try:
            self._lock.reacquire()
        except LockError:  # LockNotOwnedError: it expired and perhaps someone else took it
            self._mine, self._valid_until, self._holder = False, 0.0, None
            log.warning("election.lost", key=self._key, candidate=self.candidate)
            return False
        except RedisError:
            self._valid_until = 0.0  # sweeping stops before Redis can hand the lock on
            raise
        return True

    def _holder_and_expiry(self) -> tuple[str | None, int]:
        pipe = self._client.pipeline(transaction=False)
        pipe.get(self._key)
        pipe.pttl(self._key)
        value, expires_in_ms = pipe.execute()
        holder = value.decode(errors="replace") if isinstance(value, bytes) else value
        return holder, int(expires_in_ms)

    def _report(self, holder: str | None) -> None:
        """One log line each time the holder changes, as this candidate sees it."""
        if holder == self._holder:
            return
        self._holder = holder
        if holder == self.candidate:
            log.info("election.won", key=self._key, candidate=self.candidate, ttl_s=self._ttl)
        else:
            log.info("election.holder", key=self._key, candidate=self.candidate, holder=holder)

    def _campaign(self) -> None:
        wait = 0.0
        while not self._halt.wait(wait):
            try:
                wait = self.campaign_once()
            except Exception:  # the campaign goes on; meanwhile this candidate holds nothing
                self._valid_until, wait = 0.0, self.renew_every
                log.exception("election.failed", key=self._key, candidate=self.candidate)
