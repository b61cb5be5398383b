"""The API remembers a team token's team and contest for a while; never an unknown token."""

from __future__ import annotations

from typing import Any

from api.services import Uploaders


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


def test_an_unknown_token_is_not_remembered_so_a_new_team_can_upload_at_once() -> None:
    store = Store()
    uploaders = Uploaders(store, ttl=60)  # type: ignore[arg-type]

    assert uploaders.find("h1") is None
    store.rows["h1"] = (Team("t1"), "contest")

    assert uploaders.find("h1") == store.rows["h1"]


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
