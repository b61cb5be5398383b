"""`tilejudge audit`: check a contest's transparency log from outside, as any team can.

It takes the log's key (pinned with --key, or the server's on first use), the signed
checkpoint and every entry bundle, then checks: the signature; that the entries hash to the
signed root; that the tree extends the last checkpoint this client saw (kept under the user's
cache directory), so history was not rewritten; that each entry is canonical and consistent
with those before; that the standings the API serves are exactly those the entries imply; and
with --uploads, that a team's own files are logged and judge offline to the logged verdicts.
Each failed check is one sentence; exit status 1 if any failed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from cli.options import Role, add_server_options, command, run_with_client
from core import transparency
from core.game import Game
from core.games import game
from core.tlog import (
    Checkpoint,
    NoteError,
    Verifier,
    generate_key,
    leaf_hash,
    open_checkpoint,
    root,
    tiles,
)
from infra.settings import ClientSettings

EXIT_MISMATCH = 1
MOST_LEAVES = 1 << 24  # a checkpoint claiming more is refused, not fetched
SETTLE_S = 15.0  # how long standings that differ from the log are given to catch up
SEALED_HEADER = "tilejudge-sealed-leaf"
LEAF = re.compile(r"[0-9]{1,18}")
# GET of a path: (status, body, the first sealed leaf a 403 names); a status other than 200 and
# 403 is the fetcher's error to raise.
Get = Callable[[str], tuple[int, bytes, int | None]]


@dataclass
class Audit:
    """What an audit found: a line for each check that passed, a sentence for each that
    failed."""

    passed: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    withheld: int = 0
    game: str = ""
    implied: transparency.Implied | None = None
    uploads: dict[str, str] = field(default_factory=dict)  # sha256 -> submission id


def add_command(commands: Any) -> None:
    audit = command(
        commands,
        "audit",
        "verify a contest's signed transparency log and the standings served against it",
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

        found = audit(get, args.contest, key=args.key, seen_dir=seen_dir, err=sys.stderr)
        if args.uploads and not found.problems:
            check_uploads(found, Path(args.uploads), args.lexicon, args.rules, environ)
        return report(found, sys.stdout, sys.stderr)

    return run_with_client(
        Role.PUBLIC, act, environ, args.url, None, err=sys.stderr, verbose=args.verbose
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
) -> Audit:
    """Every check but --uploads'. The standings are read after the checkpoint, so while
    results still come in they may hold verdicts the checkpoint is too old for: a difference
    is looked at again with a newer checkpoint, for up to `settle` seconds, before it counts."""
    found = Audit()
    base = f"/v1/contests/{contest}"
    if key is None:
        key = _text(get, f"{base}/log/key").strip()
        err.write(f"tilejudge: audit: trusting the server's key {key}; pin it with --key\n")
    verifier = Verifier.from_key(key)
    implied = _snapshot(get, base, verifier, found, seen_dir)
    if implied is None or found.problems:
        return found
    if found.withheld:
        if not json.loads(_text(get, base)).get("frozen"):
            found.problems.append(
                f"{found.withheld} entries are withheld, but the contest says it is not frozen"
            )
        else:
            found.passed.append(
                "the standings are not compared while entries are withheld: audit again after "
                "the thaw"
            )
        return found
    waited = 0.0
    while True:
        differences = _standings_differences(get, base, implied, found)
        if not differences or waited >= settle:
            found.problems.extend(differences)
            return found
        sleep(1.0)
        waited += 1.0
        newer = Audit()
        implied = _snapshot(get, base, verifier, newer, None)
        if implied is None or newer.problems or newer.withheld:
            found.problems.extend(newer.problems or differences)
            return found
        found.implied, found.uploads = newer.implied, newer.uploads


def _snapshot(
    get: Get, base: str, verifier: Verifier, found: Audit, seen_dir: Path | None
) -> transparency.Implied | None:
    """The latest checkpoint, verified, and its whole tree: recomputed to the signed root,
    checked against the last checkpoint this client saw (with `seen_dir`), and replayed."""
    origin = f"{verifier.name}{base.removeprefix('/v1')}"
    signed = _text(get, f"{base}/log/checkpoint")
    try:
        checkpoint = open_checkpoint(signed, [verifier], origin)
    except (NoteError, ValueError) as exc:
        found.problems.append(f"the checkpoint does not verify with key {verifier.name}: {exc}")
        return None
    if checkpoint.size > MOST_LEAVES:
        found.problems.append(f"the checkpoint claims {checkpoint.size} entries; refused")
        return None
    found.passed.append(f"checkpoint of {checkpoint.size} entries signed by {verifier.key}")
    leaves, entries = _fetch_tree(get, base, checkpoint.size, found)
    if root(leaves) != checkpoint.root:
        found.problems.append(
            "the entries served do not hash to the signed root: the log served is not the "
            "one signed"
        )
        return None
    found.passed.append(f"{len(leaves)} entries hash to the signed root")
    _check_history(checkpoint, signed, leaves, verifier, seen_dir, found)
    return _replay(entries, found)


def sealed_leaf(header: str | None) -> int | None:
    """The leaf a 403's `Tilejudge-Sealed-Leaf` names; None for a missing or malformed one."""
    return int(header) if header is not None and LEAF.fullmatch(header) else None


def _text(get: Get, path: str) -> str:
    status, body, _ = get(path)
    if status != 200:
        raise_unreadable(path, status)
    return body.decode("utf-8", "replace")


def raise_unreadable(path: str, status: int) -> None:
    from infra.api_client import ApiError

    raise ApiError(f"GET {path}: HTTP {status}", outcome=str(status), status=status)


def _fetch_tree(
    get: Get, base: str, size: int, found: Audit
) -> tuple[list[bytes], list[tuple[int, bytes | None]]]:
    """Every leaf hash of the tree, and every entry the server shows (None where a frozen
    verdict's bundle is withheld: its leaf hashes come from the level-0 hash tile)."""
    leaves: list[bytes] = []
    entries: list[tuple[int, bytes | None]] = []
    for bundle in tiles.bundles_for(size):
        first = bundle.n * tiles.TILE_WIDTH
        status, body, sealed = get(f"{base}/log/{tiles.tile_path(bundle)}")
        shown = bundle.width
        if status == 403:
            # A frozen verdict: the entries before it in a narrower bundle, the hashes of the
            # rest from the level-0 tile (they are in the signed tree, unread until the thaw).
            if sealed is None or not first <= sealed < first + bundle.width:
                found.problems.append(
                    f"entry bundle {bundle.n} was refused without naming a sealed leaf in it"
                )
                return leaves, entries
            shown = sealed - first
            body = b""
            if shown:
                status, body, _ = get(f"{base}/log/{tiles.entries_path(bundle.n, shown)}")
                if status != 200:
                    raise_unreadable(tiles.entries_path(bundle.n, shown), status)
        try:
            bundled = tiles.decode_bundle(body, shown) if shown else []
        except ValueError as exc:
            found.problems.append(f"entry bundle {bundle.n} is malformed: {exc}")
            bundled = []
        leaves.extend(leaf_hash(entry) for entry in bundled)
        entries.extend((first + i, entry) for i, entry in enumerate(bundled))
        if shown < bundle.width and not found.problems:
            tile = tiles.Tile(0, bundle.n, bundle.width)
            status, body, _ = get(f"{base}/log/{tiles.tile_path(tile)}")
            if status != 200 or len(body) != 32 * bundle.width:
                raise_unreadable(tiles.tile_path(tile), status)
            leaves.extend(body[i : i + 32] for i in range(32 * shown, len(body), 32))
            entries.extend((first + i, None) for i in range(shown, bundle.width))
            found.withheld += bundle.width - shown
    return leaves, entries


def _check_history(
    checkpoint: Checkpoint,
    signed: str,
    leaves: Sequence[bytes],
    verifier: Verifier,
    seen_dir: Path | None,
    found: Audit,
) -> None:
    """The tree must extend the last checkpoint this client saw of the log; the newest seen is
    kept for next time (only when it extends the one before)."""
    if seen_dir is None:
        return
    # Keyed by the log alone, with the key it was signed by: a server that changes keys does
    # not start a fresh history here.
    name = hashlib.sha256(checkpoint.origin.encode()).hexdigest()[:32]
    path = seen_dir / f"{name}.json"
    if path.is_file():
        try:
            kept = json.loads(path.read_text())
            seen_key, seen_note = str(kept["key"]), str(kept["checkpoint"])
        except (OSError, ValueError, KeyError, TypeError):
            found.problems.append(
                f"{path} is unreadable; delete it to start this log's history anew"
            )
            return
        if seen_key != verifier.key:
            found.problems.append(
                f"the log's key changed from {seen_key} to {verifier.key} since this client "
                f"last saw it; if the organiser announced the change, delete {path}"
            )
            return
        try:
            before = open_checkpoint(seen_note, [verifier], checkpoint.origin)
        except (NoteError, ValueError) as exc:
            found.problems.append(f"{path} holds no checkpoint of this log ({exc}); delete it")
            return
        if before.size > checkpoint.size:
            found.problems.append(
                f"the log shrank from {before.size} to {checkpoint.size} entries since this "
                "client last saw it: history was rewritten"
            )
            return
        if root(leaves[: before.size]) != before.root:
            found.problems.append(
                f"the first {before.size} entries no longer hash to the root this client "
                "saw before: history was rewritten"
            )
            return
        found.passed.append(f"consistent with the checkpoint of {before.size} seen before")
    seen_dir.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".part")
    partial.write_text(json.dumps({"key": verifier.key, "checkpoint": signed}))
    partial.replace(path)


def _replay(
    entries: Sequence[tuple[int, bytes | None]], found: Audit
) -> transparency.Implied | None:
    decoded = []
    for index, entry in entries:
        if entry is None:
            continue
        try:
            fields = transparency.decode(entry)
        except transparency.EntryError as exc:
            found.problems.append(f"entry {index} is not a canonical entry: {exc}")
            return None
        decoded.append((index, fields))
        if fields["type"] == "upload":
            found.uploads.setdefault(fields["sha256"], fields["submission"])
    implied = found.implied = transparency.implied(decoded)
    found.problems.extend(implied.problems)
    if not implied.problems:
        found.passed.append(
            f"{len(decoded)} entries are canonical and consistent "
            f"({len(implied.live())} submissions logged)"
        )
    return implied


def _standings_differences(
    get: Get, base: str, implied: transparency.Implied, found: Audit
) -> list[str]:
    """How the standings served differ from those the entries imply (nothing: they match)."""
    from cli.client import join_pages

    contest = json.loads(_text(get, base))
    played = game(contest["game"])
    found.game = played.name
    expected = played.log_standings(implied.live())
    served = join_pages(lambda path: json.loads(_text(get, path)), f"{base}/leaderboard?limit=1000")
    differences, matched = [], []
    for name, rows in expected.items():
        shown = served.get(name)
        if not isinstance(shown, list):
            differences.append(f"the standings served have no list {name!r}")
        elif len(shown) != len(rows):
            differences.append(
                f"the standings served list {len(shown)} {name}, the log implies {len(rows)}"
            )
        else:
            projected = [{key: row.get(key) for key in want} for row, want in zip(shown, rows)]
            wrong = [(row, want) for row, want in zip(projected, rows, strict=True) if row != want]
            if wrong:
                differences.append(
                    f"the standings served differ from the log's: {name} has {wrong[0][0]}, "
                    f"the log implies {wrong[0][1]}"
                )
            else:
                matched.append(f"the standings served match the log ({len(rows)} {name})")
    if not differences:
        found.passed.extend(matched)
    return differences


def check_uploads(
    found: Audit,
    folder: Path,
    lexicon_file: str | None,
    rules_file: str | None,
    environ: Mapping[str, str],
) -> None:
    """Each file of a team's own: logged as an upload, and judged here under the logged
    ruleset to the logged verdict."""
    if found.implied is None or not found.game:
        return
    played = game(found.game)
    try:
        files = sorted(p for p in folder.iterdir() if p.is_file())
    except OSError as exc:
        found.problems.append(f"cannot read {folder}: {exc.strerror}")
        return
    for path in files:
        data = path.read_bytes()
        sid = found.uploads.get(hashlib.sha256(data).hexdigest())
        if sid is None:
            found.problems.append(f"{path.name} is not in the log (no upload with its SHA-256)")
            continue
        logged = found.implied.submissions[sid]
        if logged.verdict is None or logged.ruleset is None:
            found.passed.append(f"{path.name} is logged as {sid}, with no verdict shown yet")
            continue
        try:
            mine = judged_here(played, data, logged.ruleset, lexicon_file, rules_file, environ)
        except RulesetMissing as exc:
            found.problems.append(f"{path.name}: {exc}")
            continue
        if mine != logged.verdict:
            found.problems.append(
                f"{path.name} ({sid}): the log's verdict is {logged.verdict}, judged here {mine}"
            )
        else:
            found.passed.append(f"{path.name} ({sid}) judges here to its logged verdict")


class RulesetMissing(Exception):
    """The word list or rules data a verdict names cannot be had here."""


def judged_here(
    played: Game,
    data: bytes,
    ruleset: tuple[str, str],
    lexicon_file: str | None,
    rules_file: str | None,
    environ: Mapping[str, str],
) -> dict[str, Any]:
    """The upload judged offline under the ruleset a verdict names, as its log fields: the word
    list from --lexicon or the cache (by its id), the rules from --rules or the game's own."""
    from infra import lexicon_files
    from infra.lexicon_sources import KNOWN_LISTS
    from judge import Lexicon

    lexicon_id, rules_id = ruleset
    if lexicon_file is not None:
        lexicon = Lexicon.from_bytes(Path(lexicon_file).read_bytes())
    else:
        cache = ClientSettings.from_env(environ).lexicon_cache
        known = [k for k in KNOWN_LISTS if k.lexicon_id == lexicon_id]
        if not known or not (cache / known[0].file).is_file():
            raise RulesetMissing(
                f"the verdict names word list {lexicon_id[:16]}…, which is not in the cache "
                "(`tilejudge lexicon fetch`); give it with --lexicon"
            )
        lexicon = lexicon_files.load(cache / known[0].file)
    if lexicon.id != lexicon_id:
        raise RulesetMissing(
            f"--lexicon is list {lexicon.id[:16]}…, the verdict names {lexicon_id[:16]}…"
        )
    rules = (
        played.parse_rules(Path(rules_file).read_text())
        if rules_file is not None
        else played.default_rules()
    )
    if rules.id != rules_id:
        raise RulesetMissing(
            f"the verdict names {played.rules_noun} {rules_id[:16]}…; give it with --rules"
        )
    return played.log_result(played.judge(data, lexicon, rules, "").result)
