"""The book of an API process's connections: past an address's share its own longest idle
connection is closed (the new one refused only if none is idle), past the idle share the longest
idle of all, a trusted proxy's address is not capped, and what the book holds goes with each
connection."""

from __future__ import annotations

from api.connection_book import (
    ConnectionBook,
    TrustedProxies,
    crowded_at,
    idle_most,
    per_address_most,
)

LIMIT = 20  # per address 2 from 10 open, idle ones closed from 16


def book(trusted: str | None = None) -> ConnectionBook:
    return ConnectionBook(LIMIT, TrustedProxies(trusted))


def open_(made: ConnectionBook, name: str, address: str) -> tuple[list[object], bool]:
    made.opened(name, address)
    return made.to_close(name, len(made))


def test_the_shares_follow_the_limit() -> None:
    assert (per_address_most(1000), crowded_at(1000), idle_most(1000)) == (100, 500, 800)
    assert (per_address_most(LIMIT), crowded_at(LIMIT), idle_most(LIMIT)) == (2, 10, 16)


def crowded(made: ConnectionBook) -> ConnectionBook:
    """The book with other addresses' connections, each under way, up to its crowding."""
    for n in range(made.crowded):
        made.opened(f"other{n}", f"10.9.0.{n}")
        made.busy(f"other{n}")
    return made


def test_below_crowding_one_address_takes_what_it_needs() -> None:
    made = book()
    for n in range(made.crowded - 1):
        assert open_(made, f"a{n}", "10.0.0.1") == ([], False)


def test_past_its_share_an_address_loses_its_own_longest_idle_connection() -> None:
    made = crowded(book())
    assert open_(made, "a1", "10.0.0.1") == ([], False)
    assert open_(made, "b1", "10.0.0.2") == ([], False)
    assert open_(made, "a2", "10.0.0.1") == ([], False)
    made.busy("a1")
    made.idle("a1")  # a1 answered a request since: a2 is now the longest idle of its address

    assert open_(made, "a3", "10.0.0.1") == (["a2"], False)


def test_past_its_share_with_every_connection_busy_the_new_one_is_refused() -> None:
    made = crowded(book())
    for name in ("a1", "a2"):
        open_(made, name, "10.0.0.1")
        made.busy(name)

    assert open_(made, "a3", "10.0.0.1") == ([], True)


def test_past_the_idle_share_the_longest_idle_of_all_is_closed() -> None:
    made = book()
    for n in range(idle_most(LIMIT) - 1):  # with the new one, the process holds idle_most
        assert open_(made, f"c{n}", f"10.0.1.{n}") == ([], False)
    made.busy("c0")  # under way: never closed for another

    assert open_(made, "new", "10.0.2.1") == (["c1"], False)
    assert open_(made, "newer", "10.0.2.2") == (["c2"], False)


def test_a_trusted_proxy_s_address_is_not_capped() -> None:
    made = crowded(book("10.0.0.0/24, 192.0.2.1"))
    for n in range(5):
        assert open_(made, f"p{n}", "10.0.0.7") == ([], False)
    assert "192.0.2.1" in TrustedProxies("192.0.2.1") and "192.0.2.2" not in TrustedProxies("")
    assert "anything" in TrustedProxies("*")


def test_a_closed_connection_leaves_nothing_behind() -> None:
    made = book()
    open_(made, "a1", "10.0.0.1")
    open_(made, "a2", "10.0.0.1")
    made.busy("a2")
    made.closed("a1")
    made.closed("a2")

    assert len(made) == 0 and made.held("10.0.0.1") == 0
    assert made._idle == {} and made._idle_of == {}
