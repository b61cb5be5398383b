"""News of team tokens, to every API process at once: each remembers who a token belongs to
(`api.services.Uploaders`) for a while, so the process that deletes a team, changes one, or
closes a contest tells every other one on the team news channel (`core.ports.TeamNews`: Redis
publish/subscribe), and each forgets what it remembered of it as the message arrives. Without
Redis there is one process, and it forgets on its own.

A process that loses its subscription may have missed news meanwhile: it forgets every token
it remembers when it subscribes again. A message that cannot be told (Redis down) is logged
and dropped; the other processes then forget the team within UPLOADER_TTL_S."""

from __future__ import annotations

import threading
from typing import Protocol

import structlog

from core.errors import Unavailable
from core.ports import TeamNews

log = structlog.get_logger("tilejudge.api")
RESUBSCRIBE_S = 1.0


class Uploaders(Protocol):
    """What the news makes forget: `api.services.Uploaders`, the process's token memory."""

    def forget_team(self, team_id: str) -> None: ...
    def forget_contest(self, contest_id: str) -> None: ...
    def forget_all(self) -> None: ...


class TokenNews:
    def __init__(self, news: TeamNews | None, uploaders: Uploaders) -> None:
        self._news = news
        self._uploaders = uploaders
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._heard = threading.Condition()
        self.subscribed = threading.Event()
        self.heard = 0  # messages heard, for tests

    # -- telling ---------------------------------------------------------------------------

    def team_changed(self, team_id: str) -> None:
        """A team was deleted or changed: every process forgets its tokens."""
        self._uploaders.forget_team(team_id)
        self._tell(f"team {team_id}")

    def contest_changed(self, contest_id: str) -> None:
        self._uploaders.forget_contest(contest_id)
        self._tell(f"contest {contest_id}")

    def _tell(self, news: str) -> None:
        if self._news is None:
            return
        try:
            self._news.tell(news)
        except Unavailable:
            log.warning("token_news.publish_failed", news=news, exc_info=True)

    # -- hearing ---------------------------------------------------------------------------

    def start(self) -> None:
        if self._news is None or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._listen, name="token-news", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=RESUBSCRIBE_S * 3)
            self._thread = None

    def wait_heard(self, count: int, timeout: float) -> bool:
        """Whether `count` messages were heard within `timeout` seconds (for tests)."""
        with self._heard:
            return self._heard.wait_for(lambda: self.heard >= count, timeout)

    def hear(self, news: str) -> None:
        kind, _, name = news.partition(" ")
        if kind == "team":
            self._uploaders.forget_team(name)
        elif kind == "contest":
            self._uploaders.forget_contest(name)
        with self._heard:
            self.heard += 1
            self._heard.notify_all()

    def _listen(self) -> None:
        assert self._news is not None
        while not self._stopping.is_set():
            try:
                with self._news.subscribe(RESUBSCRIBE_S) as subscription:
                    # Nothing is missed from now on, but news may have been till now.
                    self._uploaders.forget_all()
                    self.subscribed.set()
                    while not self._stopping.is_set():
                        news = subscription.next(RESUBSCRIBE_S)
                        if news is not None:
                            self.hear(news)
            except Exception:  # Redis away: subscribe again, and forget, once it is back
                self.subscribed.clear()
                log.warning("token_news.subscription_lost", exc_info=True)
                self._stopping.wait(RESUBSCRIBE_S)
