"""The API remembers a team token's team and contest for a while, and a token no team holds
briefly; news of a team (`api.token_news`) makes it forget."""

from __future__ import annotations

from typing import Any

from api.services import Uploaders
from api.strangers import UnknownTokens


class Store:
    """Answers team_with_contest from a dict, counting the queries."""

    def __init__(self) -> None:
        self.rows: dict[str, Any] = {}
        self.queries = 0

    def team_with_contest(self, token_hash: str) -> Any:
        self.queries += 1
        return self.rows.get(token_hash)


class Team:
    def __init__(self, team_id: str) -> None:
        self.id = team_id


def test_a_known_token_is_asked_for_once_within_the_ttl() -> None:
    store = Store()
    store.rows["h1"] = (Team("t1"), "contest")
    uploaders = Uploaders(store, ttl=60)  # type: ignore[arg-type]

    assert uploaders.find("h1") == store.rows["h1"]
    assert uploaders.find("h1") == store.rows["h1"]
    assert store.queries == 1


def test_after_the_ttl_the_store_is_asked_again() -> None:
    store = Store()
    store.rows["h1"] = (Team("t1"), "contest")
    uploaders = Uploaders(store, ttl=0)  # type: ignore[arg-type]

    uploaders.find("h1")
    del store.rows["h1"]

    assert uploaders.find("h1") is None
    assert store.queries == 2


def test_an_unknown_token_is_remembered_as_unknown_briefly_and_asked_again_after() -> None:
    store = Store()
    now = [0.0]
    uploaders = Uploaders(store, ttl=60, unknown=UnknownTokens(ttl=5, monotonic=lambda: now[0]))  # type: ignore[arg-type]

    assert uploaders.find("h1") is None
    assert uploaders.find("h1") is None
    assert store.queries == 1  # the retry cost no query
    store.rows["h1"] = (Team("t1"), "contest")  # a store restored from a backup, say
    now[0] = 5.0

    assert uploaders.find("h1") == store.rows["h1"]


def test_forgetting_everything_forgets_the_unknown_tokens_too() -> None:
    store = Store()
    uploaders = Uploaders(store, ttl=60)  # type: ignore[arg-type]
    assert uploaders.find("h1") is None
    store.rows["h1"] = (Team("t1"), "contest")

    uploaders.forget_all()

    assert uploaders.find("h1") == store.rows["h1"]


def test_an_answer_older_than_news_of_its_team_is_not_remembered() -> None:
    store = Store()
    store.rows["h1"] = (Team("t1"), "contest")
    uploaders = Uploaders(store, ttl=60)  # type: ignore[arg-type]
    asked = store.team_with_contest

    def deleted_meanwhile(token_hash: str) -> object:
        found = asked(token_hash)
        uploaders.forget_team("t1")  # the news arrives while the query runs
        return found

    store.team_with_contest = deleted_meanwhile  # type: ignore[method-assign]
    uploaders.find("h1")

    assert uploaders.recall("h1") is None


def test_forgetting_a_team_forgets_its_tokens_only() -> None:
    store = Store()
    store.rows |= {"h1": (Team("t1"), "c"), "h2": (Team("t2"), "c")}
    uploaders = Uploaders(store, ttl=60)  # type: ignore[arg-type]
    uploaders.find("h1"), uploaders.find("h2")

    uploaders.forget_team("t1")
    uploaders.find("h1"), uploaders.find("h2")

    assert store.queries == 3  # h1 asked again, h2 still remembered


def test_it_remembers_at_most_so_many_tokens() -> None:
    store = Store()
    store.rows |= {f"h{n}": (Team(f"t{n}"), "c") for n in range(5)}
    uploaders = Uploaders(store, ttl=60, most=3)  # type: ignore[arg-type]
    for n in range(5):
        uploaders.find(f"h{n}")

    assert len(uploaders._known) <= 3
    assert uploaders.find("h4") == store.rows["h4"]
