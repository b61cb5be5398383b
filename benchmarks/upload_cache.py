"""CPU of keeping an upload in the worker host's upload cache and of reading it back:
`python -m benchmarks.upload_cache [--uploads N] [--size BYTES] [--rounds R] [--dir PATH]`.

Each round keeps N distinct uploads of `--size` bytes (text like a move list) with
`DiskUploadCache.put`, as live judging does after it reads an upload, then reads them all back
with `get` from a fresh instance (another process's view: its first miss indexes the
segments), as a rejudge batch does; both at the default capacity, in a new folder under `--dir`
(the temporary directory unless given: give one on the disk the worker's home is on). For
comparison, the same uploads are then each written to a file of their own (to a temporary
name, then renamed). Prints this thread's CPU a call (user + system), the median of the
rounds. Prints figures and asserts nothing."""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.machine import cpu_model
from infra.settings import Settings
from infra.upload_cache import DiskUploadCache


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.upload_cache", description=__doc__)
    parser.add_argument("--uploads", type=int, default=4000)
    parser.add_argument("--size", type=int, default=40_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    args = parser.parse_args(argv)
    uploads = [text(n, args.size) for n in range(args.uploads)]
    digests = [hashlib.sha256(data).hexdigest() for data in uploads]
    print(f"{platform.python_version()} on {cpu_model()}; {args.uploads} uploads of {args.size} B")
    rounds = [one_round(args.dir, digests, uploads) for _ in range(args.rounds)]
    puts, gets, files = (statistics.median(times) for times in zip(*rounds, strict=True))
    n = args.uploads
    print(f"keep one upload (an append to a segment):   {puts / n * 1e6:7.1f} µs")
    print(f"read one back (another process's view):     {gets / n * 1e6:7.1f} µs")
    print(f"for comparison, a file of its own an upload: {files / n * 1e6:7.1f} µs")
    return 0


def one_round(base: Path, digests: list[str], uploads: list[bytes]) -> tuple[float, float, float]:
    """CPU seconds to keep them all, to read them all back, and to write each to a file."""
    folder = Path(tempfile.mkdtemp(prefix="tj-upload-cache-", dir=base))
    try:
        cache = DiskUploadCache(folder / "cache", Settings.upload_cache_mb << 20)
        put = per_call(lambda: [cache.put(d, u) for d, u in zip(digests, uploads, strict=True)])
        reader = DiskUploadCache(folder / "cache", Settings.upload_cache_mb << 20)
        got: list[bytes | None] = []
        get = per_call(lambda: got.extend(reader.get(d) for d in digests))
        if got != uploads:
            print(f"NB: {sum(a != b for a, b in zip(got, uploads, strict=True))} read back wrong")
        files = folder / "files"
        own = per_call(
            lambda: [one_file(files, d, u) for d, u in zip(digests, uploads, strict=True)]
        )
        return put, get, own
    finally:
        shutil.rmtree(folder)


def text(n: int, size: int) -> bytes:
    line = b"%d 0 %d 1 word\n" % (n, n)
    return (line * (size // len(line) + 1))[:size]


def per_call(work: Callable[[], object]) -> float:
    start = time.thread_time()
    work()
    return time.thread_time() - start


def one_file(folder: Path, digest: str, data: bytes) -> None:
    shard = folder / digest[:2]
    shard.mkdir(parents=True, exist_ok=True)
    temp = shard / f".{digest}"
    with open(temp, "wb") as file:
        file.write(data)
    os.replace(temp, shard / digest)


if __name__ == "__main__":
    raise SystemExit(main())
