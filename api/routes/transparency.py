"""Each contest's transparency log, served as C2SP tlog-tiles under /v1/contests/{id}/log/:
the signed checkpoint, hash tiles and entry bundles, the verifier key; and a submission's
leaves with their inclusion proofs for its team (docs/transparency.md).

Tiles and bundles never change once served, so they may be cached for ever; the checkpoint
moves as the log grows. While a contest is frozen, a bundle holding a sealed verdict (one the
public standings hide) is answered 403 to anyone but the organiser, until the thaw: the
checkpoint and the hash tiles still commit to it.
"""

from __future__ import annotations

import base64
from functools import partial
from typing import Any

from fastapi import APIRouter, Response

from api.errors import ApiError, Forbidden
from api.lookups import known_contest, well_formed
from api.public import FRESH_PER_WINDOW
from api.routes.submissions import readable_submission
from api.services import AnyCaller, Organiser, Services, Svc
from core import clock
from core.errors import NotFound
from core.freeze import frozen
from core.log_signing import LogSigner
from core.records import Contest
from core.tlog import merkle, tiles

router = APIRouter()
FOR_EVER = "public, max-age=31536000, immutable"
TEXT = "text/plain; charset=utf-8"
SEALED_HEADER = "Tilejudge-Sealed-Leaf"


def _signer(svc: Services) -> LogSigner:
    if svc.log_signer is None:
        raise NotFound("this server keeps no transparency log")
    return svc.log_signer


@router.get("/v1/contests/{contest}/log/key", tags=["public"])
async def log_key(contest: str, svc: Svc) -> Response:
    """The note verifier key the contest's checkpoints are signed with (Go's
    `name+hash+base64` form): pin it, then `tilejudge audit --key` it."""
    await _contest(svc, contest)
    return Response(_signer(svc).verifier_key + "\n", media_type=TEXT)


@router.get("/v1/contests/{contest}/log/checkpoint", tags=["public"])
async def log_checkpoint(contest: str, svc: Svc) -> Response:
    """The latest signed checkpoint (C2SP tlog-checkpoint in a signed note): origin
    `<key name>/contests/<id>`, tree size, root hash. A new one is signed within about a
    second of an entry committing."""
    await _contest(svc, contest)
    head = await svc.public.get(
        ("log-head", contest), partial(svc.store.log_head, contest), fresh=FRESH_PER_WINDOW
    )
    if head is None:
        raise NotFound(f"the log of {contest} has no checkpoint yet; try again in a second")
    return Response(head.checkpoint, media_type=TEXT, headers={"Cache-Control": "no-cache"})


@router.get("/v1/contests/{contest}/log/tile/{path:path}", tags=["public"])
async def log_tile(contest: str, path: str, svc: Svc, organiser: Organiser) -> Response:
    """A hash tile (`tile/<L>/<N>[.p/<W>]`) or an entry bundle (`tile/entries/<N>[.p/<W>]`)
    of the latest checkpoint's tree, as C2SP tlog-tiles lays them out."""
    well_formed(contest)
    try:
        wanted = tiles.parse_path(f"tile/{path}")
    except ValueError as exc:
        raise NoSuchTile(str(exc)) from None
    found = await _contest(svc, contest)
    # Shared between callers (and immutable once served): a crowd of auditors costs one read.
    read = partial(_read_tile, svc, contest, wanted)
    data, sealed = await svc.public.get(("log-tile", contest, path), read, fresh=0)
    if sealed is not None and frozen(found, clock.now()):
        if not organiser:
            raise sealed_bundle(contest, sealed)
        headers = {"Cache-Control": "private, no-store"}
    else:
        headers = {"Cache-Control": FOR_EVER}
    return Response(data, media_type="application/octet-stream", headers=headers)


async def _contest(svc: Services, contest: str) -> Contest:
    return await svc.public.get(
        ("contest", well_formed(contest)),
        partial(known_contest, svc, contest),
        fresh=FRESH_PER_WINDOW,
    )


def _read_tile(
    svc: Services, contest: str, wanted: tiles.Tile | tiles.EntryBundle
) -> tuple[bytes, int | None]:
    """The tile's bytes, and for a bundle the first sealed leaf in it (None: none is);
    NotFound for one the latest checkpoint's tree does not hold."""
    head = svc.store.log_head(contest)
    size = head.size if head is not None else 0
    start, width = wanted.n * tiles.TILE_WIDTH, wanted.width
    if isinstance(wanted, tiles.Tile):
        if (start + width) * tiles.TILE_WIDTH**wanted.level > size:
            raise NoSuchTile(f"no tile {tiles.tile_path(wanted)!r} in the log's {size} entries")
        data = tiles.read_tile_data(wanted, lambda ids: svc.store.log_hashes(contest, ids))
        return data, None
    if start + width > size:
        raise NoSuchTile(f"no entries {start}..{start + width - 1} in the log's {size} entries")
    entries, sealed = svc.store.log_entries(contest, start, width)
    return tiles.encode_bundle(entries), sealed


class NoSuchTile(ApiError):
    """404 for a tile the tree does not hold yet: never cached, since it may exist a second
    later (tiles that exist are cached for ever)."""

    status, code = 404, "not_found"

    def __init__(self, detail: str) -> None:
        super().__init__(detail, headers={"Cache-Control": "no-store"})


def sealed_bundle(contest: str, leaf: int) -> Forbidden:
    """403: the bundle holds a verdict the frozen standings hide. The first such leaf is
    named (the `Tilejudge-Sealed-Leaf` header), so a client can take the narrower bundle of
    the entries before it, and the hashes of the rest from the level-0 tile."""
    return Forbidden(
        f"contest {contest} is frozen: leaf {leaf} of this bundle is a verdict revealed at the "
        "thaw; the entries before it are served in a narrower bundle",
        headers={SEALED_HEADER: str(leaf), "Cache-Control": "no-store"},
    )


@router.get("/v1/submissions/{submission_id}/log", tags=["teams"])
def submission_log(submission_id: str, svc: Svc, who: AnyCaller) -> dict[str, Any]:
    """The submission's entries in its contest's log (its upload, its verdicts), each with
    its leaf and, once the latest checkpoint covers it, the inclusion proof against that
    checkpoint (base64 hashes, RFC 6962 / Go tlog order). A frozen verdict's proof too: it
    proves the entry is logged without showing it to anyone else."""
    sub = readable_submission(svc, who, submission_id)
    head = svc.store.log_head(sub.contest_id)
    size = head.size if head is not None else 0

    def read(ids: Any) -> list[bytes]:
        return svc.store.log_hashes(sub.contest_id, ids)

    leaves = []
    for leaf, kind, _ in svc.store.log_leaves(sub.id):
        proof = None
        if leaf < size:
            proof = [base64.b64encode(h).decode() for h in merkle.prove_record(size, leaf, read)]
        leaves.append({"leaf": leaf, "type": kind, "proof": proof})
    return {
        "submission": sub.id,
        "contest": sub.contest_id,
        "checkpoint": head.checkpoint if head is not None else None,
        "size": size,
        "leaves": leaves,
    }
