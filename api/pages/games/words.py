"""The words the operations dashboard speaks of a game's standings with: each game's page part
gives its own (`GamePage.words`) and `/v1/stats` carries them, so the dashboard's script names
no game."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StandingsWords:
    """What a contest's leaderboard lists, and what a rejudge run's preview counts (its
    `scores` and its `ranks`, each as one and as many) and lists."""

    leaderboard: str  # after the contest's title: "<title>: <leaderboard>"
    scores: tuple[str, str]
    ranks: tuple[str, str]
    preview: str
