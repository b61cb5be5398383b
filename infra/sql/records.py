"""The results store's row types (contests, teams, submissions, claims) and its Duplicate error,
shared by the store's parts and re-exported from `infra.sql.store`."""

from __future__ import annotations

from dataclasses import dataclass


class Duplicate(Exception):
    """A row with that unique key exists already."""


@dataclass(frozen=True)
class Contest:
    id: str
    title: str
    opens_at: str
    closes_at: str
    lexicon_id: str
    layout_id: str
    created_at: str


@dataclass(frozen=True)
class Team:
    id: str
    contest_id: str
    name: str
    token_hash: str
    created_at: str


@dataclass(frozen=True)
class Submission:
    id: str
    contest_id: str
    team_id: str
    sha256: str
    size: int
    blob_key: str
    received_at: str
    receipt: str
    state: str
    state_at: str
    attempts: int
    judged_at: str | None
    failure: str | None


@dataclass(frozen=True)
class Claim:
    submission: Submission
    attempt: int
