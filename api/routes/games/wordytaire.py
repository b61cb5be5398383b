"""Wordytaire's part of the HTTP contract: its own route (what changed between two bonus
layouts), and its submissions as they are shown, with their line counts beside the score."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import Field

from api.schemas import OwnSubmission, ResultRow, SubmissionOut
from api.services import Admin, Services, Svc
from core.errors import NotFound
from core.games.wordytaire import Wordytaire
from judge.wordytaire import Layout

router = APIRouter()


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


def _load_layout(svc: Services, id_or_name: str) -> Layout:
    row = svc.store.find_rules(id_or_name, Wordytaire.name)
    if row is None:
        raise NotFound(f"no layout {id_or_name[:64]!r}")
    return Layout.from_json(row.content)


LEGAL = "lines judged legal, as `result` has them; null until judged"
ILLEGAL = "lines judged illegal, as `result` has them; null until judged"


class MoveListOut(SubmissionOut):
    """A Wordytaire submission, its line counts beside its score."""

    legal: int | None = Field(description=LEGAL)
    illegal: int | None = Field(description=ILLEGAL)


class OwnMoveList(OwnSubmission):
    """A Wordytaire submission in a page of a contest's, its line counts beside its score."""

    legal: int | None = Field(description=LEGAL)
    illegal: int | None = Field(description=ILLEGAL)


class MoveListRow(ResultRow):
    """A Wordytaire submission in the export, its line counts beside its score."""

    legal: int | None = Field(description=LEGAL)
    illegal: int | None = Field(description=ILLEGAL)


# Each shared model of a submission as a move list shows it.
SHOWN = {SubmissionOut: MoveListOut, OwnSubmission: OwnMoveList, ResultRow: MoveListRow}
