"""Record fields and the columns that keep them, where their names differ: the records name a
game's rules data generically (`rules_id`, `core.records`), and the tables keep the columns
they were created with (`layout_id`), which the migrations and the stored rows name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import RowMapping

_COLUMNS = {
    "rules_id": "layout_id",
    "from_rules_id": "from_layout_id",
    "frozen_rules_id": "frozen_layout_id",
}
_FIELDS = {column: field for field, column in _COLUMNS.items()}


def fields_of(row: RowMapping | Mapping[str, Any]) -> dict[str, Any]:
    """A row's values by the names of the record built from it."""
    return {_FIELDS.get(key, key): value for key, value in row.items()}


def columns_of(fields: Mapping[str, Any]) -> dict[str, Any]:
    """A record's values by the names of the columns that keep them."""
    return {_COLUMNS.get(key, key): value for key, value in fields.items()}
