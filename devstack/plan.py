"""What a load run is: its plan (how many uploads, from how many clients and teams, until when)
and its corpus (the generated uploads, each with the offline judge's score)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from core.games import DEFAULT, game
from infra.api_client import Client, HttpxTransport, Retry
from judge import Lexicon

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
REQUEST_TIMEOUT_S = 60.0  # the API's own read deadline for an upload


class LoadError(RuntimeError):
    """Bad arguments, or a set-up step the server refused: nothing was uploaded."""


@dataclass(frozen=True)
class Plan:
    url: str
    contest: str
    uploads: int
    concurrency: int
    teams: int
    admin_token: str
    timeout: float = 600.0  # for uploading and waiting on results together
    seed: int = 0
    moves: int = 120
    game: str = DEFAULT  # what the uploads are; the contest's default rules judge them
    retries: int = 0  # extra attempts after a 429, a 5xx gateway answer or a transport error
    rate: float | None = None  # uploads started per second; None: as fast as the clients go

    @property
    def retry(self) -> Retry:
        """How the burst sends an upload again. Short pauses, not Retry-After's: a run measures
        how soon the stack takes uploads again after an outage, so its clients keep asking."""
        return Retry(
            attempts=self.retries + 1,
            first_pause=0.25,
            longest_pause=5.0,
            follow_retry_after=False,
        )

    def client(self, session: httpx.Client) -> Client:
        """The API client as the organiser, over the caller's httpx session."""
        return Client(HttpxTransport(session), self.admin_token)


@dataclass(frozen=True)
class Corpus:
    data: list[bytes]
    expected: list[int]  # the offline judge's score for each upload
    lexicon: Lexicon
    rules_id: str  # of the game's default rules data, which the offline judge used


def check_loopback(url: str) -> str:
    """The URL without a trailing slash, or LoadError if it does not point at this machine."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or parts.hostname not in LOOPBACK_HOSTS:
        raise LoadError(f"refusing {url!r}: load is only sent to 127.0.0.1, localhost or ::1")
    return url.rstrip("/")


def build_corpus(lexicon: Lexicon, plan: Plan) -> Corpus:
    """Generated uploads, distinct per team (same bytes from one team would be one submission)."""
    played = game(plan.game)
    rules = played.default_rules()
    seen: set[tuple[int, bytes]] = set()
    data: list[bytes] = []
    for n in range(plan.uploads):
        one = played.sample(lexicon, rules, plan.seed * 1_000_003 + n, plan.moves)
        while (n % plan.teams, one) in seen:
            one += b"\n"  # a blank line changes the bytes, not the score
        seen.add((n % plan.teams, one))
        data.append(one)
    expected = [played.judge(d, lexicon, rules, "").result.score for d in data]
    return Corpus(data, expected, lexicon, rules.id)
