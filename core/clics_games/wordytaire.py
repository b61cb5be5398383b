"""A Wordytaire contest in the Contest API: one problem, its uploads move lists."""

from __future__ import annotations

from core.clics_games import Mapped

MAPPED = Mapped(
    problem_id="wordytaire",
    problem_name="Wordytaire",
    language={
        "id": "moves",
        "name": "Wordytaire move list",
        "entry_point_required": False,
        "extensions": ["txt"],
    },
)
