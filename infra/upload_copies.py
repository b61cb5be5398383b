"""A worker host's own copies of the uploads its processes judged, on local disk, behind
`core.ports.UploadCopies`.

A live upload reaches the worker carried in its message; a rejudge reads it again, and from S3
that read costs more CPU than anything else a rejudged upload needs besides its judging (the
caller's HTTP and signing, and the object store's own work). So the pool processes keep what
they read in a directory of the host, one file an upload, and a rejudge on the same host reads
its copy instead.

Nothing here is trusted: `core.judging.read_upload` checks a copy against the SHA-256 taken at
intake, as it checks bytes carried in a message, and reads S3 when they differ. Files are
written under a temporary name and renamed, so a reader in another process sees a whole copy
or none. The directory is bounded: a process that has written an eighth of the budget since
it last looked removes the oldest copies until the directory holds at most nine tenths of
it. A copy is removed when its team is deleted (the API's broadcast, `forget`), and the
worker host clears the directory when it starts, so a deletion broadcast while it was down
leaves nothing behind. Any error on the disk leaves the copy out: the upload is read from S3
as before."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import threading
from collections.abc import Iterable
from pathlib import Path

import structlog

log = structlog.get_logger("tilejudge.worker")

KEEP_SHARE = 0.9  # a pruned directory holds at most this share of the budget
PRUNE_AFTER_SHARE = 0.125  # of the budget, written by one process before it prunes


class HostCopies:
    """Copies of uploads by blob key under `root`, at most about `max_bytes` in all."""

    def __init__(self, root: Path, max_bytes: int) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self._written = 0  # by this process since it last pruned

    def get(self, key: str) -> bytes | None:
        try:
            return self._path(key).read_bytes()
        except OSError:
            return None

    def keep(self, key: str, data: bytes) -> None:
        if len(data) > self.max_bytes * PRUNE_AFTER_SHARE:
            return  # one copy would outgrow what a process writes between prunes
        path = self._path(key)
        if path.exists():
            return
        temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_bytes(data)
            temporary.replace(path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                temporary.unlink(missing_ok=True)
            log.warning("worker.upload_copy_not_kept", key=key, error=str(exc))
            return
        self._written += len(data)
        if self._written > self.max_bytes * PRUNE_AFTER_SHARE:
            self.prune()

    def forget(self, keys: Iterable[str]) -> int:
        """Remove these keys' copies; how many there were."""
        removed = 0
        for key in keys:
            try:
                self._path(key).unlink()
            except OSError:
                continue
            removed += 1
        return removed

    def clear(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def prune(self) -> None:
        """Remove the oldest copies (by when they were written) until the directory holds at
        most `KEEP_SHARE` of the budget."""
        self._written = 0
        found = []
        for directory in _subdirectories(self.root):
            for entry in _entries(directory):
                try:
                    stat = entry.stat()
                except OSError:
                    continue  # removed meanwhile by another process
                found.append((stat.st_mtime_ns, stat.st_size, entry.path))
        total = sum(size for _, size, _ in found)
        for _, size, path in sorted(found):
            if total <= self.max_bytes * KEEP_SHARE:
                break
            try:
                os.unlink(path)
            except OSError:
                continue
            total -= size

    def _path(self, key: str) -> Path:
        """A fixed-length name whatever the key holds, fanned out over 256 directories."""
        name = hashlib.sha256(key.encode()).hexdigest()
        return self.root / name[:2] / name


def _subdirectories(root: Path) -> list[str]:
    return [entry.path for entry in _entries(root) if entry.is_dir(follow_symlinks=False)]


def _entries(directory: Path | str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as found:
            return list(found)
    except OSError:
        return []
