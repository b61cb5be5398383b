"""`tilejudge audit`: check a contest's transparency log from outside, as any team can.

It takes the log's key (pinned with --key, or the server's on first use), the signed
checkpoint and every entry bundle, then checks: the signature; that the entries hash to the
signed root; that the tree extends the last checkpoint this client saw (kept under the user's
cache directory), so history was not rewritten; that each entry is canonical and consistent
with those before; that the standings the API serves are exactly those the entries imply;
with --token, that each result served to the token's holder (a team its own, the organiser
every one) is its submission's latest logged outcome; and with --uploads, that a team's own
files are logged and judge offline to the logged verdicts. Each failed check is one sentence;
exit status 1 if any failed. The log is read in `cli.audit_log`, compared in
`cli.audit_checks`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

from cli.audit_checks import (
    RulesetMissing,
    check_uploads,
    judged_here,
    served_differences,
    standings_differences,
)
from cli.audit_log import SEALED_HEADER, Audit, Get, Snapshot, sealed_leaf, snapshot, text
from cli.options import Role, add_server_options, command, run_with_client
from core.tlog import NoteError, Verifier, generate_key
from infra.settings import ClientSettings

__all__ = [
    "SEALED_HEADER",
    "Audit",
    "RulesetMissing",
    "add_command",
    "add_key_command",
    "audit",
    "check_uploads",
    "judged_here",
    "report",
    "sealed_leaf",
]

EXIT_MISMATCH = 1
SETTLE_S = 15.0  # how long standings that differ from the log are given to catch up


def add_command(commands: Any) -> None:
    audit = command(
        commands,
        "audit",
        "verify a contest's signed transparency log, and the standings (with --token, the "
        "results) served, against it",
        epilog="exit status: 0 when every check passes; 1 when one fails (each is a sentence "
        "on stderr); 2 when the server cannot be asked. docs/transparency.md says what the log "
        "proves and what it cannot.",
    )
    audit.add_argument("--contest", required=True, help="the contest's id")
    audit.add_argument(
        "--key",
        help="the log's verifier key (name+hash+base64) to trust; without it the server's own "
        "is fetched and printed, to pin next time",
    )
    audit.add_argument(
        "--uploads",
        metavar="DIR",
        help="a team's own upload files: each must be logged, and is judged here under the "
        "logged ruleset to the logged verdict",
    )
    audit.add_argument("--lexicon", metavar="FILE", help="the word list for --uploads")
    audit.add_argument("--rules", metavar="FILE", help="the layout or board for --uploads")
    audit.add_argument(
        "--token",
        help="a team's token: also check that each result the team is served of its own "
        "submissions is the latest outcome the log holds for it (its own sealed verdicts "
        "included, during a freeze); the admin token: every submission's (default: none, the "
        "public's audit)",
    )
    add_server_options(audit, Role.PUBLIC)
    audit.set_defaults(run=_run)


def add_key_command(commands: Any) -> None:
    new_key = command(
        commands,
        "log-key",
        "make a signing key for the transparency logs of a many-host deployment",
        epilog="Prints the signer key (a secret: give it to every API host as "
        "$TILEJUDGE_HOME/log-key, TILEJUDGE_LOG_KEY_FILE or TILEJUDGE_LOG_KEY) on stdout, and "
        "the verifier key auditors pin on stderr. `tilejudge up` makes its own.",
    )
    new_key.add_argument(
        "name",
        metavar="NAME",
        help="the key's name, the deployment's public host (judge.example.org)",
    )
    new_key.set_defaults(run=_new_key)


def _new_key(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    try:
        signer, verifier = generate_key(args.name)
    except NoteError as exc:
        sys.stderr.write(f"tilejudge: {exc} (a name is printable, without spaces or '+')\n")
        return 2
    sys.stdout.write(signer + "\n")
    sys.stderr.write(f"verifier key: {verifier}\n")
    return 0


def _run(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    settings = ClientSettings.from_env(environ)
    seen_dir = settings.lexicon_cache.parent / "tilejudge-audit"

    def act(api: Any) -> int:
        def get(path: str) -> tuple[int, bytes, int | None]:
            answer = api.request("GET", path, accept=(403,))
            return answer.status, answer.body, sealed_leaf(answer.headers.get(SEALED_HEADER))

        found = audit(
            get,
            args.contest,
            key=args.key,
            seen_dir=seen_dir,
            err=sys.stderr,
            served=args.token is not None,
        )
        if args.uploads and not found.problems:
            check_uploads(found, Path(args.uploads), args.lexicon, args.rules, environ)
        return report(found, sys.stdout, sys.stderr)

    # Without --token, no token at all (not even one in the environment): the public's audit.
    role = Role.PUBLIC if args.token is None else Role.READER
    return run_with_client(
        role, act, environ, args.url, args.token, err=sys.stderr, verbose=args.verbose
    )


def report(found: Audit, out: TextIO, err: TextIO) -> int:
    for line in found.passed:
        out.write(f"ok: {line}\n")
    if found.withheld:
        out.write(
            f"withheld: {found.withheld} entries (verdicts of a frozen contest) are revealed "
            "at the thaw; their hashes are in the checked tree\n"
        )
    for problem in found.problems:
        err.write(f"tilejudge: audit: {problem}\n")
    return EXIT_MISMATCH if found.problems else 0


def audit(
    get: Get,
    contest: str,
    *,
    key: str | None,
    seen_dir: Path | None,
    err: TextIO,
    settle: float = SETTLE_S,
    sleep: Callable[[float], None] = time.sleep,
    served: bool = False,
) -> Audit:
    """Every check but --uploads'; with `served` (a token's audit), the results served to
    the token's holder too. What is served is read after the checkpoint, so while results
    still come in it may hold verdicts the checkpoint is too old for: a difference is looked
    at again with a newer checkpoint, for up to `settle` seconds, before it counts. While
    entries are withheld (a frozen contest) the standings are not compared; a team's own
    results are, with its own sealed entries."""
    found = Audit()
    base = f"/v1/contests/{contest}"
    if key is None:
        key = text(get, f"{base}/log/key").strip()
        err.write(f"tilejudge: audit: trusting the server's key {key}; pin it with --key\n")
    verifier = Verifier.from_key(key)
    shot = snapshot(get, base, verifier, found, seen_dir)
    if shot is None or found.problems:
        return found
    standings = not found.withheld
    if found.withheld:
        if not json.loads(text(get, base)).get("frozen"):
            found.problems.append(
                f"{found.withheld} entries are withheld, but the contest says it is not frozen"
            )
            return found
        found.passed.append(
            "the standings are not compared while entries are withheld: audit again after the thaw"
        )
        if not served:
            return found
    waited = 0.0
    while True:
        differences = _differences(get, base, shot, found, standings, served)
        if not differences or waited >= settle:
            found.problems.extend(differences)
            return found
        sleep(1.0)
        waited += 1.0
        newer = Audit()
        shot = snapshot(get, base, verifier, newer, None)
        if shot is None or newer.problems or (standings and newer.withheld):
            found.problems.extend(newer.problems or differences)
            return found
        found.implied, found.uploads = newer.implied, newer.uploads


def _differences(
    get: Get, base: str, shot: Snapshot, found: Audit, standings: bool, served: bool
) -> list[str]:
    differences = standings_differences(get, base, shot.implied, found) if standings else []
    if served:
        differences += served_differences(get, base, shot, found)
    return differences
