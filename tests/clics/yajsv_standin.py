#!/usr/bin/env python3
"""A stand-in for `yajsv` (github.com/neilpa/yajsv) over Python's `jsonschema`, taking the
arguments the CLICS `check-api.sh` gives it (`-q -s SCHEMA -r 'DIR/*.json' DOCUMENT...`) and
answering as yajsv does: `PATH: fail: ...` for each failure, `PATH: error: ...` for a document
that does not parse, `PATH: pass` unless quiet; exit 1 on failures, 2 on errors (3 both), 4 on
misuse."""

from __future__ import annotations

import argparse
import glob
import json
import sys
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="yajsv", add_help=False)
    parser.add_argument("-s", dest="schema")
    parser.add_argument("-r", dest="refs", action="append", default=[])
    parser.add_argument("-q", dest="quiet", action="store_true")
    parser.add_argument("documents", nargs="*")
    try:
        args = parser.parse_args(argv)
    except SystemExit:
        return 4
    if not args.schema or not args.documents:
        print("usage: yajsv -s schema.json [-q] [-r refs] document.json ...", file=sys.stderr)
        return 4
    schemas = {args.schema, *(p for ref in args.refs for p in glob.glob(ref))}
    loaded = {path: json.loads(Path(path).read_text()) for path in schemas}
    registry: Registry[Any] = Registry().with_resources(
        (schema["$id"], Resource.from_contents(schema)) for schema in loaded.values()
    )
    validator = Draft202012Validator(loaded[args.schema], registry=registry)
    failed = errors = False
    for path in args.documents:
        try:
            document = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            print(f"{path}: error: {exc}")
            errors = True
            continue
        found = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
        for error in found:
            where = "/".join(str(p) for p in error.absolute_path) or "(root)"
            print(f"{path}: fail: {where}: {error.message}")
        failed |= bool(found)
        if not found and not args.quiet:
            print(f"{path}: pass")
    return (1 if failed else 0) | (2 if errors else 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
