"""CPU of one S3 object call, as the project makes it, against a local `weed mini`:
`python -m benchmarks.s3_calls [--objects N] [--size BYTES] [--rounds R] [--content-type T]`.

Times `S3BlobStore.put` and `S3BlobStore.get` of N objects of `--size` bytes (text like a move
list), first through the boto3 client's own calls, then as URLs the client presigns, sent with
`infra.presigned_http.PresignedHttp`, then as URLs `infra.blobstore.Presigner` signs (what
`S3BlobStore.from_settings` builds), in turns for R rounds, each object stored as
`--content-type` (intake's media type for an upload unless given: SeaweedFS gzips what it takes
for text). Prints, a call, the calling process's CPU (user + system, this thread's network
stack included) and SeaweedFS's, the median of the rounds; then the CPU of signing one URL
alone, the client's way and `Presigner`'s. Prints figures and asserts nothing."""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import string
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import psutil

from benchmarks.machine import cpu_model
from core.intake import UPLOAD_CONTENT_TYPE
from devstack.process import Service
from devstack.seaweedfs import s3_credentials, start_seaweedfs
from infra.blobstore import _HEADERS, PRESIGNED_S, S3BlobStore
from infra.presigned_http import PresignedHttp

BUCKET = "bench"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.s3_calls", description=__doc__)
    parser.add_argument("--objects", type=int, default=1000, help="objects a round")
    parser.add_argument("--size", type=int, default=36_000, help="bytes an object")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each way")
    parser.add_argument(
        "--content-type", default=UPLOAD_CONTENT_TYPE, help="the media type each PUT stores"
    )
    args = parser.parse_args(argv)

    shown = " ".join(sys.argv[1:] if argv is None else argv)
    print(f"command: python -m benchmarks.s3_calls {shown}".rstrip())
    print(f"python {platform.python_version()} on {cpu_model()}")
    data = move_list_text(args.size)
    with tempfile.TemporaryDirectory(prefix="s3-calls-") as scratch:
        service = start_seaweedfs(Path(scratch), BUCKET)
        try:
            keys = s3_credentials(Path(scratch) / "s3-credentials")
            store = S3BlobStore.connect(
                service.url, BUCKET, "us-east-1", (keys.access_key, keys.secret_key)
            )
            ways = {
                "boto3 client calls": S3BlobStore(store._client, BUCKET),
                "client presigns": S3BlobStore(store._client, BUCKET, http=PresignedHttp()),
                "Presigner signs": store,
            }
            signing = _signing_us(store)
            figures: dict[tuple[str, str], list[tuple[float, float]]] = {}
            for _ in range(args.rounds):
                for way, store in ways.items():
                    prefix = f"{way.split()[0]}/{time.monotonic_ns()}"
                    keys_of = [f"{prefix}/{n}" for n in range(args.objects)]
                    put = _per_call(service, keys_of, partial(_put, store, data, args.content_type))
                    got = _per_call(service, keys_of, store.get)
                    figures.setdefault((way, "PUT"), []).append(put)
                    figures.setdefault((way, "GET"), []).append(got)
        finally:
            service.stop()
    print(
        f"\n{args.objects} objects of {args.size} bytes as {args.content_type};"
        f" ms a call, median of {args.rounds}:"
    )
    print(f"  {'way':20} {'call':5} {'caller CPU':>10} {'SeaweedFS CPU':>14}")
    for (way, call), runs in sorted(figures.items(), key=lambda item: item[0][1]):
        caller = statistics.median(r[0] for r in runs)
        weed = statistics.median(r[1] for r in runs)
        print(f"  {way:20} {call:5} {caller:10.2f} {weed:14.2f}")
    print("\nsigning a URL alone, µs of CPU (the best of 3 rounds of 5,000):")
    for (way, call), us in signing.items():
        print(f"  {way:20} {call:5} {us:10.1f}")
    return 0


def _signing_us(store: S3BlobStore) -> dict[tuple[str, str], float]:
    """µs of CPU to sign one GET and one PUT URL (with intake's fields), the client's way and
    `Presigner`'s."""
    presigner = store._presigner
    assert presigner is not None
    key = "uploads/contest-1/team-1/0123456789abcdef0123456789abcdef"
    fields = {"ContentType": UPLOAD_CONTENT_TYPE, "ContentMD5": "1B2M2Y8AsgTpgAmY7PhCfg=="}
    headers = {_HEADERS[name]: value for name, value in fields.items()}
    ways: dict[tuple[str, str], Callable[[], object]] = {
        ("client presigns", "GET"): partial(
            store._client.generate_presigned_url,
            "get_object",
            Params={"Bucket": BUCKET, "Key": key},
            ExpiresIn=PRESIGNED_S,
        ),
        ("client presigns", "PUT"): partial(
            store._client.generate_presigned_url,
            "put_object",
            Params={"Bucket": BUCKET, "Key": key, **fields},
            ExpiresIn=PRESIGNED_S,
        ),
        ("Presigner signs", "GET"): partial(presigner.url, "GET", key, {}),
        ("Presigner signs", "PUT"): partial(presigner.url, "PUT", key, headers),
    }
    best: dict[tuple[str, str], float] = {}
    for _ in range(3):
        for way, sign in ways.items():
            started = time.process_time()
            for _ in range(5000):
                sign()
            us = (time.process_time() - started) / 5000 * 1e6
            best[way] = min(best.get(way, us), us)
    return best


def move_list_text(size: int) -> bytes:
    """`size` bytes of text like a move list's lines (a position, a direction, a word of random
    letters): as much work to gzip as an upload, where a line repeated would pack for nothing
    and hide what SeaweedFS spends packing text."""
    rng = random.Random(0)
    lines: list[bytes] = []
    total = 0
    while total < size:
        word = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 9)))
        line = f"{rng.randint(-60, 60)} {rng.randint(-60, 60)} {rng.choice('HV')} {word}\n"
        lines.append(line.encode())
        total += len(line)
    return b"".join(lines)[:size]


def _put(store: S3BlobStore, data: bytes, content_type: str, key: str) -> None:
    store.put(key, data, content_type)


def _per_call(
    service: Service, keys: list[str], call: Callable[[str], object]
) -> tuple[float, float]:
    """ms of this process's CPU and of SeaweedFS's, a call, over `keys` in turn."""
    call(keys[0])  # a connection made before the clock starts, as a running process has one
    weed_before, mine_before = _cpu_of(service.process.pid), time.process_time()
    for key in keys:
        call(key)
    mine = time.process_time() - mine_before
    weed = _cpu_of(service.process.pid) - weed_before
    return mine / len(keys) * 1e3, weed / len(keys) * 1e3


def _cpu_of(pid: int) -> float:
    """CPU seconds (user + system) the process `pid` has used."""
    return sum(psutil.Process(pid).cpu_times()[:2])


if __name__ == "__main__":
    sys.exit(main())
