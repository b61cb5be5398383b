"""What the transparency log costs the pipeline (prints, asserts nothing): the pipeline
benchmark (intake, end to end, queue drain) and the deadline spike (intake), each run with the
log and without it in turn, the rounds alternating, then the median of each and the cost.

Without the log is the same code with `benchmarks/without_log` first on PYTHONPATH: its
`sitecustomize` switches off the log's writes and its sequencer in every process of the stack.

    python -m benchmarks.log_cost [--rounds 2] [--submissions 300] [--spike-uploads 2000]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

WITHOUT = Path(__file__).resolve().parent / "without_log"
# pipeline_bench's round lines: "  1     253.9 /  256.7/s      137.7/s (261.3/s)   0.54  ...",
# judge only before / after, end to end (accepted); a run's figure is the median of its rounds.
_ROUND = r"^\s*\d+\s+[\d.]+ /\s*[\d.]+/s\s+"
FIGURES = {
    "pipeline intake (accepted/s)": re.compile(_ROUND + r"[\d.]+/s \(\s*([\d.]+)/s\)", re.M),
    "pipeline end to end (judged/s)": re.compile(_ROUND + r"([\d.]+)/s \(", re.M),
    "pipeline drain (judged/s)": re.compile(r"^queue drain, 2 worker processes:\s+([\d.]+)", re.M),
    "spike intake (accepted/s)": re.compile(r"^\s+intake\s+([\d.]+) accepted/s", re.M),
}


def run(module: str, args: list[str], with_log: bool) -> str:
    env = dict(os.environ)
    if not with_log:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(WITHOUT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-m", module, *args], env=env, capture_output=True, text=True, timeout=3600
    )
    if done.returncode != 0:
        print(done.stdout[-2000:], done.stderr[-2000:], file=sys.stderr)
        raise SystemExit(f"{module} failed ({'with' if with_log else 'without'} the log)")
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--submissions", type=int, default=300)
    parser.add_argument("--spike-uploads", type=int, default=2000)
    args = parser.parse_args()
    found: dict[tuple[str, bool], list[float]] = {}
    for round_ in range(args.rounds):
        for with_log in (round_ % 2 == 0, round_ % 2 == 1):  # who goes first alternates
            out = run(
                "benchmarks.pipeline_bench",
                ["--skip-memory", "--submissions", str(args.submissions)],
                with_log,
            )
            out += run("benchmarks.spike_bench", ["--uploads", str(args.spike_uploads)], with_log)
            for name, pattern in FIGURES.items():
                values = [float(value) for value in pattern.findall(out)]
                if values:
                    found.setdefault((name, with_log), []).append(statistics.median(values))
            print(
                f"round {round_ + 1}, {'with' if with_log else 'without'} the log: done", flush=True
            )
    print(f"{'figure':34} {'without the log':>16} {'with the log':>14} {'cost':>7}")
    for name in FIGURES:
        without, with_ = found.get((name, False), []), found.get((name, True), [])
        if not without or not with_:
            print(f"{name:34} not found in the benchmarks' output")
            continue
        a, b = statistics.median(without), statistics.median(with_)
        print(
            f"{name:34} {a:16.1f} {b:14.1f} {(a - b) / a:7.1%}"
            f"   (runs: {', '.join(f'{x:.1f}' for x in without)} / {', '.join(f'{x:.1f}' for x in with_)})"
        )


if __name__ == "__main__":
    main()
