"""What `tilejudge audit` reads of a contest's transparency log, and checks as it reads: the
signed checkpoint, every entry bundle (the leaf hashes of sealed ones), the tree's root, its
history against the last checkpoint this client saw, and each entry's canonical form, replayed
into the contest state the entries imply."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core import transparency
from core.tlog import Checkpoint, NoteError, Verifier, leaf_hash, open_checkpoint, root, tiles

MOST_LEAVES = 1 << 24  # a checkpoint claiming more is refused, not fetched
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


@dataclass
class Snapshot:
    """The log as one checkpoint signs it: every leaf hash, every entry shown (None where a
    sealed one is withheld), the shown entries' fields by leaf, and what they imply."""

    leaves: list[bytes]
    entries: list[bytes | None]
    decoded: list[tuple[int, dict[str, Any]]]
    implied: transparency.Implied


def sealed_leaf(header: str | None) -> int | None:
    """The leaf a 403's `Tilejudge-Sealed-Leaf` names; None for a missing or malformed one."""
    return int(header) if header is not None and LEAF.fullmatch(header) else None


def text(get: Get, path: str) -> str:
    status, body, _ = get(path)
    if status != 200:
        raise_unreadable(path, status)
    return body.decode("utf-8", "replace")


def raise_unreadable(path: str, status: int) -> None:
    from infra.api_client import ApiError

    raise ApiError(f"GET {path}: HTTP {status}", outcome=str(status), status=status)


def snapshot(
    get: Get, base: str, verifier: Verifier, found: Audit, seen_dir: Path | None
) -> Snapshot | None:
    """The latest checkpoint, verified, and its whole tree: recomputed to the signed root,
    checked against the last checkpoint this client saw (with `seen_dir`), and replayed."""
    origin = f"{verifier.name}{base.removeprefix('/v1')}"
    signed = text(get, f"{base}/log/checkpoint")
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
    decoded = _replay(entries, found)
    if decoded is None or found.implied is None:
        return None
    return Snapshot(leaves, [entry for _, entry in entries], decoded, found.implied)


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
) -> list[tuple[int, dict[str, Any]]] | None:
    """The shown entries' fields by leaf, replayed into `found.implied`; None (and the
    problem) at the first entry that is not canonical."""
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
    return decoded
