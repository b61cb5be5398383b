"""How long a Crosstiles game log's identity takes on hostile bytes (5 MB of garbage, NULs,
invalid UTF-8, one enormous line, pragma, rack or word...):
`python -m benchmarks.hostile_identity [--repeat R]`.

Prints figures and asserts nothing: the test (`tests/unit/judge/crosstiles/test_identity.py`)
bounds the work an identity does on the same bytes by counting calls, and this prints what that
work costs in time on this machine, which load stretches. The API computes an identity for every
upload to a Crosstiles contest, on uploads of up to TILEJUDGE_MAX_UPLOAD_BYTES.
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import time

from benchmarks.machine import cpu_model
from judge.crosstiles.identity import identity

FIVE_MB = 5_000_000
HEAD = b"#crosstiles 1\n#seed s\n#player1 ann\n#player2 bob\n"
# The hostile uploads, each made when asked for (5 MB apiece); the test counts the work an
# identity of each does.
HOSTILE = {
    "empty": lambda: b"",
    "random garbage": lambda: random.Random(0).randbytes(FIVE_MB),
    "invalid UTF-8": lambda: b"\xff\xfe\xc3(" * (FIVE_MB // 4),
    "NULs": lambda: b"\x00" * FIVE_MB,
    "one 5 MB line": lambda: b"x" * FIVE_MB,
    "one 5 MB line of spaces and tabs": lambda: b" \t" * (FIVE_MB // 2),
    "one 5 MB rack": lambda: HEAD + b">ann: " + b"A" * FIVE_MB + b" 8H AB +1 1",
    "one 5 MB word": lambda: HEAD + b">ann: A 8H " + b"a" * FIVE_MB + b" +1 1",
    "one 5 MB pragma": lambda: b"#crosstiles 1\n#seed " + b"s" * FIVE_MB,
    "one 5 MB note": lambda: b"#note " + random.Random(1).randbytes(FIVE_MB),
    "one 5 MB line of fields": lambda: b">ann: " + b"A " * (FIVE_MB // 2),
    "1 MB of short lines": lambda: b"x\n" * 500_000,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each case (default: 5)")
    args = parser.parse_args()
    print(f"{cpu_model()}, Python {platform.python_version()}; best and median of {args.repeat}")
    print(f"{'case':<36}{'MB':>7}{'best s':>9}{'median s':>10}{'MB/s':>8}")
    for case in sorted(HOSTILE):
        data = HOSTILE[case]()
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            identity(data)
            times.append(time.perf_counter() - start)
        best, median = min(times), statistics.median(times)
        size = len(data) / 1e6
        rate = f"{size / best:8.0f}" if best > 0 and size else f"{'-':>8}"
        print(f"{case:<36}{size:7.1f}{best:9.3f}{median:10.3f}{rate}")


if __name__ == "__main__":
    main()
