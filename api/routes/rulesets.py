"""Word lists, layouts and Crosstiles boards: register one, list them, and compare two
versions."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool

from api import schemas
from api.body import read_body
from api.services import Admin, Services, Svc
from core.errors import Invalid, NotFound
from core.games import Game, board_json
from core.registry import register_lexicon
from judge import Lexicon
from judge.crosstiles import Board
from judge.wordytaire import Layout

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
    if len(lexicon) == 0:
        raise Invalid("the word list is empty")
    row = await run_in_threadpool(
        lambda: register_lexicon(svc.store, svc.blobs, lexicon, name=name, source="api", by="admin")
    )
    return schemas.LexiconOut(id=row["id"], name=row["name"], words=row["words"])


@router.get("/v1/lexicons", tags=["admin"])
def list_lexicons(svc: Svc, who: Admin) -> dict[str, Any]:
    return {
        "lexicons": [
            {
                k: row[k]
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


@router.post("/v1/layouts", status_code=201, tags=["admin"])
async def add_layout(
    request: Request,
    svc: Svc,
    who: Admin,
    name: Annotated[str, Query(min_length=1, max_length=200)],
) -> dict[str, str]:
    """Register a layout (JSON: period, bonus rows, letters). Content-addressed."""
    layout = Layout.from_json(await read_body(request, limit=LAYOUT_MAX_BYTES))
    svc.store.add_layout(
        id=layout.id, name=name, content=layout.to_json().decode(), created_by="admin"
    )
    return {"id": layout.id, "name": name}


@router.get("/v1/layouts", tags=["admin"])
def list_layouts(svc: Svc, who: Admin) -> dict[str, Any]:
    return {"layouts": _listed(svc.store.all_layouts(Game.WORDYTAIRE))}


@router.post("/v1/boards", status_code=201, tags=["admin"])
async def add_board(
    request: Request,
    svc: Svc,
    who: Admin,
    name: Annotated[str, Query(min_length=1, max_length=200)],
) -> dict[str, str]:
    """Register a Crosstiles board (JSON: premium squares, tiles with counts and values), for
    a Crosstiles contest or a rejudge under a corrected one. Content-addressed."""
    board = Board.from_json(await read_body(request, limit=LAYOUT_MAX_BYTES))
    svc.store.add_layout(
        id=board.id, name=name, content=board_json(board), created_by="admin", game=Game.CROSSTILES
    )
    return {"id": board.id, "name": name}


@router.get("/v1/boards", tags=["admin"])
def list_boards(svc: Svc, who: Admin) -> dict[str, Any]:
    return {"boards": _listed(svc.store.all_layouts(Game.CROSSTILES))}


@router.get("/v1/layouts/{a}/diff/{b}", tags=["admin"])
def layout_diff(a: str, b: str, svc: Svc, who: Admin) -> dict[str, Any]:
    """Squares and letters that differ between two layouts."""
    old, new = _load_layout(svc, a), _load_layout(svc, b)
    squares = [
        {"row": r, "column": c, "from": old.bonus[r][c], "to": new.bonus[r][c]}
        for r in range(min(old.period, new.period))
        for c in range(min(old.period, new.period))
        if old.bonus[r][c] != new.bonus[r][c]
    ]
    letters = [
        {"letter": x, "from": [old.points[x], old.bag[x]], "to": [new.points[x], new.bag[x]]}
        for x in sorted(old.points)
        if (old.points[x], old.bag[x]) != (new.points[x], new.bag[x])
    ]
    return {
        "from": old.id,
        "to": new.id,
        "period": [old.period, new.period],
        "squares": squares,
        "letters": letters,
    }


def _load_lexicon(svc: Services, id_or_name: str) -> Lexicon:
    row = svc.store.find_lexicon(id_or_name)
    if row is None:
        raise NotFound(f"no lexicon {id_or_name[:64]!r}")
    return Lexicon.from_bytes(svc.blobs.get(row["blob_key"]))


def _load_layout(svc: Services, id_or_name: str) -> Layout:
    row = svc.store.find_layout(id_or_name, Game.WORDYTAIRE)
    if row is None:
        raise NotFound(f"no layout {id_or_name[:64]!r}")
    return Layout.from_json(row["content"])


def _listed(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Registered layouts or boards as listed: without their content."""
    return [{k: row[k] for k in ("id", "name", "created_by", "created_at")} for row in rows]
