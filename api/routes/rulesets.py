"""Word lists and each game's rules data (layouts, boards): register one, list them, and
compare two word lists."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool

from api import schemas
from api.body import read_body
from api.services import Admin, Services, Svc
from core.errors import NotFound
from core.game import Game
from core.games import game, names
from core.records import RulesData
from core.registering import register_rules, register_word_list
from judge import Lexicon

router = APIRouter()
LEXICON_MAX_BYTES = 64 * 1024 * 1024
LAYOUT_MAX_BYTES = 1024 * 1024


@router.post("/v1/lexicons", status_code=201, response_model=schemas.LexiconOut, tags=["admin"])
async def add_lexicon(
    request: Request,
    svc: Svc,
    who: Admin,
    name: Annotated[str, Query(min_length=1, max_length=200)],
) -> schemas.LexiconOut:
    """Register a word list (text/plain, one lower-case word per line). Content-addressed."""
    data = await read_body(request, limit=LEXICON_MAX_BYTES)
    lexicon = await run_in_threadpool(Lexicon.from_bytes, data)
    row = await run_in_threadpool(
        partial(
            register_word_list,
            lexicon,
            name=name,
            by="admin",
            store=svc.store,
            blobs=svc.blobs,
            publisher=svc.intake.publisher,
        )
    )
    return schemas.LexiconOut(id=row.id, name=row.name, words=row.words)


@router.get("/v1/lexicons", tags=["admin"])
def list_lexicons(svc: Svc, who: Admin) -> dict[str, Any]:
    return {
        "lexicons": [
            {
                k: getattr(row, k)
                for k in ("id", "name", "words", "size", "source", "created_by", "created_at")
            }
            for row in svc.store.all_lexicons()
        ]
    }


@router.get("/v1/lexicons/{a}/diff/{b}", tags=["admin"])
def lexicon_diff(a: str, b: str, svc: Svc, who: Admin) -> dict[str, Any]:
    """Words added and removed going from lexicon `a` to `b` (ids or names)."""
    old, new = _load_lexicon(svc, a), _load_lexicon(svc, b)
    added, removed = old.diff(new)
    return {"from": old.id, "to": new.id, "added": sorted(added), "removed": sorted(removed)}


def rules_router() -> APIRouter:
    """Each registered game's rules data routes, named after it (`POST /v1/layouts`, `GET
    /v1/boards`...): register one (content-addressed), list them."""
    made = APIRouter()
    for name in names():
        played = game(name)
        plural = f"{played.rules_noun}s"
        made.add_api_route(
            f"/v1/{plural}",
            _adder(played),
            methods=["POST"],
            status_code=201,
            tags=["admin"],
            name=f"add_{played.rules_noun}",
            description=f"Register a {played.rules_noun} of {name} (JSON), for its contests or "
            "a rejudge under a corrected one. Content-addressed: the same content is the same "
            f"{played.rules_noun}.",
        )
        made.add_api_route(
            f"/v1/{plural}",
            _lister(played, plural),
            methods=["GET"],
            tags=["admin"],
            name=f"list_{plural}",
            description=f"The registered {plural} of {name}, oldest first, without content.",
        )
    return made


def _adder(played: Game) -> Callable[..., Awaitable[dict[str, str]]]:
    async def add_rules(
        request: Request,
        svc: Svc,
        who: Admin,
        name: Annotated[str, Query(min_length=1, max_length=200)],
    ) -> dict[str, str]:
        body = await read_body(request, limit=LAYOUT_MAX_BYTES)
        rules = played.parse_rules(body.decode("utf-8", "replace"))
        register_rules(played, rules, name=name, by="admin", store=svc.store)
        return {"id": rules.id, "name": name}  # as asked, though first registered by another

    return add_rules


def _lister(played: Game, plural: str) -> Callable[..., dict[str, Any]]:
    def list_rules(svc: Svc, who: Admin) -> dict[str, Any]:
        return {plural: _listed(svc.store.all_rules(played.name))}

    return list_rules


def _load_lexicon(svc: Services, id_or_name: str) -> Lexicon:
    row = svc.store.find_lexicon(id_or_name)
    if row is None:
        raise NotFound(f"no lexicon {id_or_name[:64]!r}")
    return Lexicon.from_bytes(svc.blobs.get(row.blob_key))


def _listed(rows: list[RulesData]) -> list[dict[str, Any]]:
    """Registered layouts or boards as listed: without their content."""
    return [
        {"id": r.id, "name": r.name, "created_by": r.created_by, "created_at": r.created_at}
        for r in rows
    ]
