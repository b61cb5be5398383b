"""The plain reference judge as a command, the yardstick of `benchmarks.wordytaire_cli_judge`:
`python -m benchmarks.plain_judge_cli --lexicon FILE --layout-id ID FILE...` writes to stdout
one JSON report a file, as `tilejudge judge --json` does (SPEC's fields and the file's name),
judged by devstack/testing/plain_judge.py. Standard library only, written plainly: it reads the
word list into a set, takes its id by SPEC's recipe and serialises each report with
`json.dumps`."""

from __future__ import annotations

import argparse
import hashlib
import json
import sys

from devstack.testing.plain_judge import plain_judge


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.plain_judge_cli")
    parser.add_argument("files", nargs="+")
    parser.add_argument("--lexicon", required=True, help="word list, one word a line")
    parser.add_argument("--layout-id", required=True, help="the id the reports name (SPEC's)")
    args = parser.parse_args(argv)

    with open(args.lexicon, "rb") as found:
        words = {line.strip().decode("ascii") for line in found} - {""}
    digest = hashlib.sha256()
    for word in sorted(words):
        digest.update(word.encode("ascii") + b"\n")
    lexicon_id = digest.hexdigest()

    out = sys.stdout
    for name in args.files:
        with open(name, "rb") as upload:
            result = plain_judge(upload.read(), words)
        report = {
            "file": name,
            "total": result["total"],
            "legal": result["legal"],
            "illegal": result["illegal"],
            "lexicon": lexicon_id,
            "layout": args.layout_id,
            "lines": result["lines"],
        }
        out.write(json.dumps(report, separators=(",", ":")) + "\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
