"""How long a Crosstiles game log's identity takes on hostile bytes (5 MB of garbage, NULs,
invalid UTF-8, one enormous line, pragma, rack or word...):
`python -m benchmarks.crosstiles_identity [--repeat R]`.

Prints figures and asserts nothing: the test (`tests/unit/judge/crosstiles/test_identity.py`)
bounds the work an identity does on the same bytes by counting calls, and this prints what that
work costs in time on this machine, which load stretches. The API computes an identity for every
upload to a Crosstiles contest, on uploads of up to TILEJUDGE_MAX_UPLOAD_BYTES.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

from benchmarks.machine import cpu_model
from devstack.testing.hostile_logs import HOSTILE
from judge.crosstiles.identity import identity


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
