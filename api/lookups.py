"""Finding what a route's path names, or answering 404: contests by id, and which ids may be
looked up at all."""

from __future__ import annotations

import re
from typing import Any

from api.services import Services
from core.errors import NotFound
from core.records import Contest

# Only well-formed ids reach SQL: PostgreSQL refuses a NUL byte with an error, not a miss.
ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def well_formed(contest_id: str) -> str:
    """The id, or 404 for one no contest can have (before it keys a cache or reaches SQL)."""
    if not ID.fullmatch(contest_id):
        raise NotFound(f"no contest {contest_id[:64]!r}")
    return contest_id


def known_contest(svc: Services, contest_id: str) -> Contest:
    found = svc.store.get_contest(contest_id) if ID.fullmatch(contest_id) else None
    if found is None:
        raise NotFound(f"no contest {contest_id[:64]!r}")
    return found


def shown(row: dict[str, Any], fields: dict[str, Any] | None) -> dict[str, Any]:
    """A result as the API shows it: its game's own fields, and those of them that are the
    shared score and line counts (null where its game has none, or before it is judged)."""
    return {
        **row,
        "score": fields.get("score") if fields else None,
        "legal": fields.get("legal") if fields else None,
        "illegal": fields.get("illegal") if fields else None,
        "result": fields,
    }
