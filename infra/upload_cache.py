"""Uploads' bytes kept on a worker host's disk by their SHA-256 (`core.ports.UploadCache`).

A worker keeps each upload it judges live or reads from S3, so a rejudge on the same host reads
it from the page cache or the disk instead of S3: one GET costs SeaweedFS about 0.9 ms of CPU
and its caller 0.3 ms, a tenth of what judging the upload costs (BENCHMARKS.md), and a real S3
charges each GET and answers in tens of milliseconds. Never authoritative: every read is checked
against the digest taken at intake (`core.judging.read_upload`), and a failure to keep or to
read is only a miss.

Each process appends to a segment file of its own: a record is the digest (32 bytes), the
length (8) and the bytes. An append costs about 12 µs for 40 KB, where a file per upload cost
150 µs and more to create on ext4 (docs/performance.md). A process indexes its own appends, and
reads the other processes' segments for theirs when it misses (at most once a second). A
segment is closed at a sixteenth of `capacity` or RECORDS_A_SEGMENT records; whoever starts a
new one deletes the oldest segments until the whole fits in `capacity`. So the folder holds at
most `capacity` plus one segment being written for each of the host's processes, and a
process's index at most about 17 segments' records. A writer whose segment another process
deleted notices within LINK_CHECK_S, drops what it indexed there and starts a new one.

A segment not written for `max_age` seconds is deleted, by a thread of each worker process
that looks every EXPIRE_EVERY_S (`keep_expiring`), and at each new segment. A team's deletion
has every running worker host overwrite its uploads' records with zeros (`forget`); the
expiry bounds how long a host that missed it keeps them (`api/privacy.md`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import structlog

log = structlog.get_logger("tilejudge.upload_cache")

RECORDS_A_SEGMENT = 8192  # bounds the index: tiny uploads would otherwise fill it by the million
HEADER = 40  # the digest and the length
SUFFIX = ".seg"
HOST_ID = "host-id"  # the folder's host id (`DiskUploadCache.host`)
RESCAN_S = 1.0  # a miss reads the other processes' new records at most this often
# A writer looks this often whether another process deleted its segment (making room, or
# expiring it): appends to a deleted file would be lost to the others and to `forget`.
LINK_CHECK_S = 1.0
RETRY_WRITE_S = 60.0  # after a failed write (a full disk, say), keeping waits this long
EXPIRE_EVERY_S = 300.0
_FORGOTTEN = bytes(32)  # a record's digest once `forget` has zeroed it


@dataclass
class _Segment:
    fd: int
    scanned: int = 0  # the records before this offset are in the index


@dataclass
class _Writing:
    """The segment this process appends to: its end is its `scanned` offset."""

    name: str
    segment: _Segment
    records: int = 0
    checked_at: float = field(default_factory=time.monotonic)  # still linked, last looked


@dataclass
class _State:
    """What one process holds; a forked child starts from nothing of its parent's."""

    pid: int = field(default_factory=os.getpid)
    lock: threading.Lock = field(default_factory=threading.Lock)
    index: dict[bytes, tuple[str, int, int]] = field(default_factory=dict)
    segments: dict[str, _Segment] = field(default_factory=dict)
    writing: _Writing | None = None
    scanned_at: float = float("-inf")
    broken_until: float = float("-inf")
    warned: bool = False


class DiskUploadCache:
    def __init__(self, directory: Path, capacity: int, max_age: float = 86400.0) -> None:
        self.directory = directory
        self.capacity = capacity
        self.max_age = max_age
        self.segment_bytes = max(1, capacity // 16)
        self._state = _State()
        self._host: str | None = None

    @property
    def host(self) -> str | None:
        """The id of the host this cache is on (`core.ports.UploadCache.host`): made at random
        the first time and kept in the folder, so every process of the host reads the same,
        and a new folder (a new host, or one whose disk was wiped) is a new holder. None if
        the folder cannot be written: then no rejudge batch is sent here by preference."""
        if self._host is None:
            self._host = _host_id(self.directory)
        return self._host

    def keep_expiring(self) -> None:
        """Delete the segments older than `max_age` now, then every EXPIRE_EVERY_S on a daemon
        thread of this process."""

        def expiring() -> None:
            while True:
                self.expire()
                time.sleep(EXPIRE_EVERY_S)

        threading.Thread(target=expiring, name="upload-cache-expiry", daemon=True).start()

    def expire(self) -> None:
        state = self._mine()
        with state.lock:
            try:
                self._trim(state)
            except OSError as exc:  # the thread goes on: the next look may succeed
                log.warning(
                    "upload_cache.expiry_failed", directory=str(self.directory), error=str(exc)
                )

    def forget(self, sha256s: list[str]) -> int:
        """Overwrite these uploads' records with zeros, in every segment of the host (a team's
        deletion, `core.messages.FORGET_UPLOADS_COMMAND`); how many records. A process that
        indexed one reads zeros, which fail the digest, and goes to S3."""
        wanted = {digest for digest in map(_digest, sha256s) if digest is not None}
        forgotten = 0
        for name in self._names() if wanted else []:
            try:
                fd = os.open(self.directory / name, os.O_RDWR)
            except OSError:
                continue  # deleted meanwhile
            try:
                for offset, length in _records(fd, os.fstat(fd).st_size, self.segment_bytes):
                    if os.pread(fd, 32, offset) in wanted:
                        os.pwrite(fd, bytes(32), offset)  # the length stays: the chain holds
                        os.pwrite(fd, bytes(length), offset + HEADER)
                        forgotten += 1
            except OSError as exc:
                log.warning("upload_cache.forget_failed", segment=name, error=str(exc))
            finally:
                os.close(fd)
        return forgotten

    def get(self, sha256: str) -> bytes | None:
        digest = _digest(sha256)
        if digest is None:
            return None
        state = self._mine()
        with state.lock:  # so that no other thread closes the segment while it is read
            found = state.index.get(digest)
            if found is None and time.monotonic() - state.scanned_at >= RESCAN_S:
                self._scan(state)
                found = state.index.get(digest)
            if found is None or (segment := state.segments.get(found[0])) is None:
                return None
            _, offset, length = found
            try:
                data = os.pread(segment.fd, length, offset)
            except OSError:
                return None
        return data if len(data) == length else None

    def put(self, sha256: str, data: bytes) -> None:
        digest = _digest(sha256)
        if digest is None or HEADER + len(data) > self.segment_bytes:
            return  # one upload never takes a large share of the cache
        state = self._mine()
        with state.lock:
            if time.monotonic() < state.broken_until:
                return
            try:
                self._append(state, digest, data)
            except OSError as exc:
                state.broken_until = time.monotonic() + RETRY_WRITE_S
                state.writing = None  # a torn segment is left, open for reading what it holds
                if not state.warned:  # once a process: a full disk would log every upload
                    state.warned = True
                    log.warning(
                        "upload_cache.unwritable", directory=str(self.directory), error=str(exc)
                    )

    def _append(self, state: _State, digest: bytes, data: bytes) -> None:
        writing = state.writing
        if writing is not None and self._deleted(writing):
            self._forget(state, writing.name)  # its records go with it, here as for the others
            writing = None
        if (
            writing is None
            or writing.segment.scanned + HEADER + len(data) > self.segment_bytes
            or writing.records >= RECORDS_A_SEGMENT
        ):
            writing = self._start_segment(state)
        record = [digest, len(data).to_bytes(8, "big"), data]
        segment = writing.segment
        written = os.writev(segment.fd, record)
        if written != HEADER + len(data):  # a full disk: the record is torn, and so the segment
            raise OSError(f"wrote {written} of {HEADER + len(data)} bytes")
        state.index[digest] = (writing.name, segment.scanned + HEADER, len(data))
        segment.scanned += written
        writing.records += 1

    def _deleted(self, writing: _Writing) -> bool:
        """Whether another process deleted the segment being written (looked at most once a
        LINK_CHECK_S)."""
        now = time.monotonic()
        if now - writing.checked_at < LINK_CHECK_S:
            return False
        writing.checked_at = now
        return os.fstat(writing.segment.fd).st_nlink == 0

    def _start_segment(self, state: _State) -> _Writing:
        state.writing = None  # the full one stays open for reading
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        name = f"{time.time_ns():020d}-{os.getpid()}-{secrets.token_hex(4)}{SUFFIX}"
        fd = os.open(self.directory / name, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        segment = state.segments[name] = _Segment(fd)
        state.writing = _Writing(name, segment)
        self._trim(state)
        return state.writing

    def _trim(self, state: _State) -> None:
        """Delete the segments older than `max_age`, and the oldest, this process's or
        another's, until the rest fit."""
        names = self._names()
        self._forget_gone(state, names)  # and so close them: their disk space is freed
        found = []
        for name in names:
            with contextlib.suppress(FileNotFoundError):  # deleted by another meanwhile
                found.append((name, (self.directory / name).stat()))
        total = sum(stat.st_size for _, stat in found)
        stale = time.time() - self.max_age
        for name, stat in found:
            mine = state.writing is not None and name == state.writing.name
            if stat.st_mtime >= stale and (total <= self.capacity or mine):
                continue
            with contextlib.suppress(FileNotFoundError):
                (self.directory / name).unlink()
            total -= stat.st_size
            self._forget(state, name)

    def _scan(self, state: _State) -> None:
        """Index the records appended since the last scan, by every process of the host;
        forget the segments deleted meanwhile."""
        state.scanned_at = time.monotonic()
        try:
            names = self._names()
        except OSError:
            return
        self._forget_gone(state, names)
        for name in names:
            segment = state.segments.get(name)
            if segment is None:
                try:
                    fd = os.open(self.directory / name, os.O_RDONLY)
                except OSError:
                    continue
                segment = state.segments[name] = _Segment(fd)
            self._scan_segment(state, name, segment)

    def _scan_segment(self, state: _State, name: str, segment: _Segment) -> None:
        try:
            size = os.fstat(segment.fd).st_size
            for offset, length in _records(segment.fd, size, self.segment_bytes, segment.scanned):
                digest = os.pread(segment.fd, 32, offset)
                if digest != _FORGOTTEN:
                    state.index[digest] = (name, offset + HEADER, length)
                segment.scanned = offset + HEADER + length
        except OSError:
            return

    def _forget_gone(self, state: _State, names: list[str]) -> None:
        for gone in set(state.segments) - set(names):
            self._forget(state, gone)

    def _forget(self, state: _State, name: str) -> None:
        segment = state.segments.pop(name, None)
        if segment is None:
            return
        if state.writing and state.writing.name == name:
            state.writing = None
        with contextlib.suppress(OSError):
            os.close(segment.fd)
        for digest in [d for d, (at, _, _) in state.index.items() if at == name]:
            del state.index[digest]

    def _names(self) -> list[str]:
        """The segments, oldest first."""
        try:
            return sorted(n for n in os.listdir(self.directory) if n.endswith(SUFFIX))
        except FileNotFoundError:
            return []

    def _mine(self) -> _State:
        state = self._state
        if state.pid != os.getpid():  # forked: the parent's segment and index are not ours
            for segment in state.segments.values():
                with contextlib.suppress(OSError):
                    os.close(segment.fd)  # the child's copies; the parent's stay open
            state = self._state = _State()
        return state


def _host_id(directory: Path) -> str | None:
    """The id kept in `directory`, or a new one made there; the first writer's wins."""
    path = directory / HOST_ID
    for _ in range(2):
        try:
            if (found := path.read_text().strip()) and found.isalnum():
                return found
        except OSError:
            pass
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fresh = directory / f".{HOST_ID}.{os.getpid()}.{secrets.token_hex(4)}"
            fresh.write_text(secrets.token_hex(8))
            try:
                os.link(fresh, path)  # fails if another process made it first
            except FileExistsError:
                pass
            finally:
                fresh.unlink()
        except OSError as exc:
            log.warning("upload_cache.no_host_id", directory=str(directory), error=str(exc))
            return None
    return None


def _records(fd: int, size: int, most: int, offset: int = 0) -> Iterator[tuple[int, int]]:
    """Each whole record's offset and length, from `offset` up to `size`; the first torn one
    (still being written, or left by a writer that died) ends them."""
    while offset + HEADER <= size:
        length = int.from_bytes(os.pread(fd, 8, offset + 32), "big")
        if length > most or offset + HEADER + length > size:
            return
        yield offset, length
        offset += HEADER + length


def _digest(sha256: str) -> bytes | None:
    if len(sha256) != 64:
        return None
    try:
        digest = bytes.fromhex(sha256)
    except ValueError:
        return None
    return digest if digest.hex() == sha256 else None  # lower-case hex only, as intake writes
