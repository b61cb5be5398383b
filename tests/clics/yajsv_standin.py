#!/usr/bin/env python3
"""A stand-in for `yajsv` (github.com/neilpa/yajsv) over Python's `jsonschema`, taking the
arguments the CLICS `check-api.sh` gives it (`-q -s SCHEMA -r 'DIR/*.json' DOCUMENT...`) and
answering as yajsv does: `PATH: fail: ...` for each failure, `PATH: error: ...` for a document
that does not parse, `PATH: pass` unless quiet; exit 1 on failures, 2 on errors (3 both), 4 on
misuse.

`check-api.sh` runs the validator once an endpoint, and importing `jsonschema` is most of a
run. `serving(path)` answers the same calls from the importing process over a Unix socket, for
`yajsv_client.py`, which imports nothing but the standard library."""

from __future__ import annotations

import argparse
import contextlib
import glob
import json
import os
import socketserver
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

_LOCK = threading.Lock()
# By the schema asked for and the text of every schema loaded beside it.
_VALIDATORS: dict[tuple[str, tuple[tuple[str, str], ...]], Draft202012Validator] = {}


def validate(argv: list[str], cwd: str = ".") -> tuple[int, str]:
    """The exit code and standard output of `yajsv ARGV` run in `cwd`."""
    parser = argparse.ArgumentParser(prog="yajsv", add_help=False, exit_on_error=False)
    parser.add_argument("-s", dest="schema")
    parser.add_argument("-r", dest="refs", action="append", default=[])
    parser.add_argument("-q", dest="quiet", action="store_true")
    parser.add_argument("documents", nargs="*")
    try:
        args = parser.parse_args(argv)
    except (SystemExit, argparse.ArgumentError):
        return 4, ""
    if not args.schema or not args.documents:
        return 4, "usage: yajsv -s schema.json [-q] [-r refs] document.json ...\n"
    here = Path(cwd)
    schema = str(here / args.schema)
    paths = sorted({schema, *(p for ref in args.refs for p in glob.glob(str(here / ref)))})
    texts = tuple((path, Path(path).read_text()) for path in paths)
    key = (schema, texts)
    with _LOCK:  # a check-api run asks for each endpoint's schema again and again
        if key not in _VALIDATORS:
            _VALIDATORS[key] = _validator(texts, schema)
        validator = _VALIDATORS[key]
    failed = errors = False
    out = []
    for path in args.documents:
        try:
            document = json.loads((here / path).read_text())
        except (OSError, ValueError) as exc:
            out.append(f"{path}: error: {exc}")
            errors = True
            continue
        found = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
        for error in found:
            where = "/".join(str(p) for p in error.absolute_path) or "(root)"
            out.append(f"{path}: fail: {where}: {error.message}")
        failed |= bool(found)
        if not found and not args.quiet:
            out.append(f"{path}: pass")
    return (1 if failed else 0) | (2 if errors else 0), "".join(line + "\n" for line in out)


def _validator(texts: tuple[tuple[str, str], ...], schema: str) -> Draft202012Validator:
    loaded = {path: json.loads(text) for path, text in texts}
    registry: Registry[Any] = Registry().with_resources(
        (document["$id"], Resource.from_contents(document)) for document in loaded.values()
    )
    return Draft202012Validator(loaded[schema], registry=registry)


class _Answer(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        asked = json.loads(self.rfile.readline())
        try:
            code, out = validate(asked["argv"], asked["cwd"])
        except Exception as exc:  # a schema that does not load: yajsv's misuse
            code, out = 4, f"error: {type(exc).__name__}: {exc}\n"
        self.wfile.write(json.dumps({"code": code, "out": out}).encode() + b"\n")


@contextlib.contextmanager
def serving(path: Path) -> Iterator[Path]:
    """`validate` answering `yajsv_client.py PATH ...` on the Unix socket `path` until exit."""
    server = socketserver.ThreadingUnixStreamServer(str(path), _Answer)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield path
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def main(argv: list[str]) -> int:
    code, out = validate(argv)
    sys.stdout.write(out)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
