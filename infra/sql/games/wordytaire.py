"""Wordytaire's rows in SQL: a judged move list's line counts (`wordytaire_results`), hung off
its result row, which keeps what every game's result has (its score); teams are ranked by their
best score, as for any game with nothing more (`TeamRanked`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Column, Connection, ForeignKey, Integer, Row, Table, insert, select

from core.games.wordytaire import LineCounts
from infra.sql.base import StoreBase
from infra.sql.games import TeamRanked
from infra.sql.schema import metadata, results

# A judged move list's lines legal and illegal and the tiles it placed, beside its result row,
# so that a rejudge's results switch with `apply`, in one update.
wordytaire_results = Table(
    "wordytaire_results",
    metadata,
    Column("result_id", Integer, ForeignKey("results.id"), primary_key=True),
    Column("legal", Integer, nullable=False),
    Column("illegal", Integer, nullable=False),
    Column("tiles", Integer, nullable=False),
)
W = wordytaire_results.c


class WordytaireRows(TeamRanked):
    """Teams ranked by their best score; a result's own fields and its verdict entry add its
    line counts (a result stored without them, none)."""

    tables = (wordytaire_results,)

    def put(self, conn: Connection, judged: Sequence[tuple[int, object]]) -> None:
        rows = [
            {"result_id": rid, "legal": own.legal, "illegal": own.illegal, "tiles": own.tiles}
            for rid, own in judged
            if isinstance(own, LineCounts)
        ]
        if rows:
            conn.execute(insert(wordytaire_results), rows)

    def fields(self, store: StoreBase, result_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """The score, and the lines legal and illegal."""
        query = (
            select(results.c.id, results.c.score, W.legal, W.illegal)
            .select_from(results.outerjoin(wordytaire_results, W.result_id == results.c.id))
            .where(results.c.id.in_(list(result_ids)))
        )
        with store.read() as conn:
            rows = conn.execute(query).all()
        return {
            r.id: {"score": r.score}
            | ({} if r.legal is None else {"legal": r.legal, "illegal": r.illegal})
            for r in rows
        }

    def log_results(self, conn: Connection, rows: Sequence[Row[Any]]) -> dict[int, dict[str, Any]]:
        """The score, the lines legal and illegal, and the tiles placed."""
        scores = {r.id: r.score for r in rows}
        counts = conn.execute(select(wordytaire_results).where(W.result_id.in_(list(scores)))).all()
        return {
            c.result_id: {
                "score": scores[c.result_id],
                "legal": c.legal,
                "illegal": c.illegal,
                "tiles": c.tiles,
            }
            for c in counts
        }


ROWS = WordytaireRows()
