"""Wordytaire's part of the scoreboard page: its teams ranked by best score, and the chart of
the leading teams' best score over contest time (`api.pages.games.ranked`)."""

from __future__ import annotations

from api.pages.games.ranked import TeamRanked

PAGE = TeamRanked()
