"""The results store's word lists (lexicons, with the names they carry), board layouts and
Crosstiles boards: `SqlRulesets` (the `core.ports.RulesetStore` port), and `LexiconsMixin`,
registering a word list, which the `SubmissionStore` port has (`infra.sql.submission_store`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlalchemy import and_, insert, or_, select

from core import clock
from core.events import LexiconAdded, LexiconNamed, RulesAdded
from core.games import DEFAULT as DEFAULT_GAME
from core.records import RulesData, WordList
from infra.sql.base import StoreBase
from infra.sql.schema import layouts, lexicon_names, lexicons


class LexiconsMixin(StoreBase):
    """Registering a word list: a part of `SqlSubmissions`, whose port has it."""

    def add_lexicon(
        self,
        *,
        id: str,
        name: str,
        words: int,
        size: int,
        blob_key: str,
        source: str,
        created_by: str,
    ) -> WordList:
        """Register a word list, or add a name to one registered already; returns it with the
        name asked for."""
        now = clock.now()
        with self.write() as (conn, pending):
            existing = conn.execute(select(lexicons).where(lexicons.c.id == id)).mappings().first()
            row: dict[str, Any] = (
                dict(existing)
                if existing is not None
                else {
                    "id": id,
                    "name": name,
                    "words": words,
                    "size": size,
                    "blob_key": blob_key,
                    "source": source,
                    "created_by": created_by,
                    "created_at": now,
                }
            )
            if existing is None:
                conn.execute(insert(lexicons).values(**row))
                pending.append(LexiconAdded(lexicon=id, name=name, words=words, by=created_by))
            labelled = conn.execute(
                select(lexicon_names.c.name).where(
                    and_(lexicon_names.c.name == name, lexicon_names.c.lexicon_id == id)
                )
            ).first()
            if labelled is None:
                conn.execute(insert(lexicon_names).values(name=name, lexicon_id=id, created_at=now))
                if existing is not None:
                    pending.append(LexiconNamed(lexicon=id, name=name, by=created_by))
            return replace(WordList(**row), name=name)


class SqlRulesets(StoreBase):
    """`core.ports.RulesetStore` in SQL."""

    def find_lexicon(self, id_or_name: str) -> WordList | None:
        """By id, else by the newest list carrying that name."""
        with self.read() as conn:
            row = (
                conn.execute(select(lexicons).where(lexicons.c.id == id_or_name)).mappings().first()
            )
            if row is None:
                row = (
                    conn.execute(
                        select(lexicons)
                        .join(lexicon_names, lexicon_names.c.lexicon_id == lexicons.c.id)
                        .where(lexicon_names.c.name == id_or_name)
                        .order_by(lexicon_names.c.created_at.desc())
                        .limit(1)
                    )
                    .mappings()
                    .first()
                )
            return WordList(**row) if row is not None else None

    def all_lexicons(self) -> list[WordList]:
        """Every registered list, oldest first, with all the names it carries."""
        with self.read() as conn:
            names: dict[str, list[str]] = {}
            for label in conn.execute(select(lexicon_names).order_by(lexicon_names.c.created_at)):
                names.setdefault(label.lexicon_id, []).append(label.name)
            rows = conn.execute(select(lexicons).order_by(lexicons.c.created_at)).mappings()
            return [WordList(**r, names=tuple(names.get(r["id"], [r["name"]]))) for r in rows]

    def add_rules(
        self, *, id: str, name: str, content: str, created_by: str, game: str = DEFAULT_GAME
    ) -> RulesData:
        """Register a game's rules data: a layout, a board (content-addressed: the same
        content again returns the row there)."""
        with self.write() as (conn, pending):
            existing = conn.execute(select(layouts).where(layouts.c.id == id)).mappings().first()
            if existing is not None:
                return RulesData(**existing)
            row = {
                "id": id,
                "name": name,
                "content": content,
                "created_by": created_by,
                "created_at": clock.now(),
                "game": game,
            }
            conn.execute(insert(layouts).values(**row))
            pending.append(RulesAdded(layout=id, name=name, by=created_by, game=game))
            return RulesData(**row)

    def all_rules(self, game: str | None = None) -> list[RulesData]:
        """Every layout and board (or those of one game), oldest first."""
        query = select(layouts).order_by(layouts.c.created_at)
        if game is not None:
            query = query.where(layouts.c.game == game)
        with self.read() as conn:
            return [RulesData(**r) for r in conn.execute(query).mappings()]

    def find_rules(self, id_or_name: str, game: str | None = None) -> RulesData | None:
        """By id or name (the newest of that name), among one game's rules data if given."""
        query = select(layouts).where(or_(layouts.c.id == id_or_name, layouts.c.name == id_or_name))
        if game is not None:
            query = query.where(layouts.c.game == game)
        with self.read() as conn:
            row = (
                conn.execute(query.order_by(layouts.c.created_at.desc()).limit(1))
                .mappings()
                .first()
            )
            return RulesData(**row) if row is not None else None
