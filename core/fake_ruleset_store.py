"""An in-memory `RulesetStore` for unit tests: the SQL store's rules (infra/sql/rulesets.py)
over the word lists, their names and the rules data (layouts, boards) of the database it is
given, each call one transaction, its `down` and `failing` holding here too. Word lists are
registered through the submission store (`SubmissionStore.add_lexicon`), as in SQL."""

from __future__ import annotations

from core.events import RulesAdded
from core.fake_database import InMemoryDatabase
from core.games import DEFAULT as DEFAULT_GAME
from core.records import RulesData, WordList


class InMemoryRulesetStore:
    """Word lists and each game's rules data, as registered."""

    def __init__(self, db: InMemoryDatabase) -> None:
        self.db = db

    def find_lexicon(self, id_or_name: str) -> WordList | None:
        """By id, else the list that name was given to last."""
        db = self.db
        with db.read("find_lexicon"):
            row = db.lexicons.get(id_or_name)
            if row is None:
                named = [lid for name, lid in db.lexicon_names if name == id_or_name]
                row = db.lexicons[named[-1]] if named else None
            return WordList(**row) if row is not None else None

    def all_lexicons(self) -> list[WordList]:
        """Every registered list, oldest first, with all the names it carries in the order
        they were given."""
        db = self.db
        with db.read("all_lexicons"):
            rows = sorted(db.lexicons.values(), key=lambda r: str(r["created_at"]))
            return [
                WordList(
                    **row,
                    names=tuple(n for n, lid in db.lexicon_names if lid == row["id"])
                    or (row["name"],),
                )
                for row in rows
            ]

    def add_rules(
        self, *, id: str, name: str, content: str, created_by: str, game: str = DEFAULT_GAME
    ) -> RulesData:
        """Content-addressed: the same id again returns the row there, under its first name."""
        db = self.db
        with db.write("add_rules") as pending:
            existing = db.rules_data.get(id)
            if existing is not None:
                return existing
            row = db.rules_data[id] = RulesData(id, name, content, created_by, db.now(), game)
            pending.append(RulesAdded(layout=id, name=name, by=created_by, game=game))
            return row

    def find_rules(self, id_or_name: str, game: str | None = None) -> RulesData | None:
        """By id or name (the newest of that name), among one game's rules data if given."""
        with self.db.read("find_rules"):
            found = [
                row
                for row in self.db.rules_data.values()
                if id_or_name in (row.id, row.name) and game in (None, row.game)
            ]
            return max(found, key=lambda row: row.created_at, default=None)

    def all_rules(self, game: str | None = None) -> list[RulesData]:
        """Every layout and board (or those of one game), oldest first."""
        with self.db.read("all_rules"):
            found = [row for row in self.db.rules_data.values() if game in (None, row.game)]
            return sorted(found, key=lambda row: row.created_at)
