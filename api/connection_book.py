"""Which of an API process's connections are idle, and whose: the book `api.http_protocol` keeps
so that idle keep-alive connections never crowd out work.

uvicorn counts every open connection against `--limit-concurrency` and answers 503 to any
request once the count is reached, idle keep-alive connections included, so thousands of
connections that each sent one request and then waited would shut every team out. The book
lets the protocol do better at a new connection:

- once the process holds `crowded` connections, one client address holds at most `per_address`
  of them: past it, that address's longest idle connection is closed (the new one is refused
  only when none of its connections is idle). Below, the process has room for all, so many
  clients behind one address (a campus's NAT, a load test) take as many as they need;
- once the process holds `idle_most` connections, its longest idle connection is closed, so the
  rest of the limit stays free for requests under way (a team's client reuses its connections
  within seconds, so the longest idle are a hoarder's).

Closing an idle connection costs its client nothing but a new connection: a client checks that
a kept-alive connection is still open before it reuses it. Addresses of trusted proxies (those
`--forwarded-allow-ips` names) are not capped: every client behind them shares their address,
and the proxy caps its own clients (`docs/deploy.md`).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Hashable, Iterable

from core import tuning

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def per_address_most(limit: int) -> int:
    """Connections one client address may hold in a process whose limit is `limit`."""
    return max(2, int(limit * tuning.CONNECTIONS_PER_ADDRESS_SHARE))


def crowded_at(limit: int) -> int:
    """Connections from which a client address is held to its share."""
    return max(1, int(limit * tuning.CONNECTIONS_CROWDED_SHARE))


def idle_most(limit: int) -> int:
    """Connections at which the process starts closing idle ones for a new one."""
    return max(1, int(limit * tuning.CONNECTIONS_IDLE_SHARE))


class TrustedProxies:
    """The addresses `--forwarded-allow-ips` names (addresses, networks, or "*" for all)."""

    def __init__(self, allowed: str | Iterable[str] | None) -> None:
        items = allowed.split(",") if isinstance(allowed, str) else list(allowed or [])
        self.everyone = any(item.strip() == "*" for item in items)
        self._networks: list[IPNetwork] = []
        self._names: set[str] = set()
        for item in (i.strip() for i in items):
            if not item or item == "*":
                continue
            try:
                self._networks.append(ipaddress.ip_network(item, strict=False))
            except ValueError:
                self._names.add(item)  # a unix socket's name, say

    def __contains__(self, host: str) -> bool:
        if self.everyone or host in self._names:
            return True
        try:
            address: IPAddress = ipaddress.ip_address(host)
        except ValueError:
            return False
        return any(address in network for network in self._networks)


class ConnectionBook:
    """A process's open connections by client address, and the idle ones, longest idle first
    (overall and per address), so that each choice costs a dictionary step, not a scan."""

    def __init__(self, limit: int, trusted: TrustedProxies) -> None:
        self.per_address = per_address_most(limit)
        self.crowded = crowded_at(limit)
        self.idle_most = idle_most(limit)
        self._trusted = trusted
        self._address: dict[Hashable, str] = {}
        self._held: dict[str, int] = {}  # connections per address
        self._idle: dict[Hashable, None] = {}  # insertion order: longest idle first
        self._idle_of: dict[str, dict[Hashable, None]] = {}  # the same, per address
        self.closed_idle = 0  # for tests and benchmarks

    def __len__(self) -> int:
        return len(self._address)

    def held(self, address: str) -> int:
        return self._held.get(address, 0)

    def opened(self, connection: Hashable, address: str) -> None:
        """A new connection, idle until its first byte arrives."""
        self._address[connection] = address
        self._held[address] = self._held.get(address, 0) + 1
        self.idle(connection)

    def closed(self, connection: Hashable) -> None:
        self.busy(connection)
        address = self._address.pop(connection, None)
        if address is not None:
            self._held[address] -= 1
            if not self._held[address]:
                del self._held[address]

    def busy(self, connection: Hashable) -> None:
        if self._idle.pop(connection, 0) is None:
            address = self._address[connection]
            of = self._idle_of[address]
            del of[connection]
            if not of:
                del self._idle_of[address]

    def idle(self, connection: Hashable) -> None:
        """Idle from now on (again): the shortest idle of all."""
        if connection in self._address:
            self.busy(connection)
            self._idle[connection] = None
            self._idle_of.setdefault(self._address[connection], {})[connection] = None

    def is_idle(self, connection: Hashable) -> bool:
        return connection in self._idle

    def to_close(self, new: Hashable, total: int) -> tuple[list[Hashable], bool]:
        """For a connection just opened (`new`, already in the book) while the process holds
        `total`: the idle connections to close for it, and whether `new` itself is refused
        (its address holds its most, none of the others idle)."""
        address = self._address[new]
        closing: list[Hashable] = []
        if (
            total >= self.crowded
            and self.held(address) > self.per_address
            and address not in self._trusted
        ):
            victim = _first(self._idle_of.get(address, {}), new)
            if victim is None:
                return [], True
            self._close(victim, closing)
        if total - len(closing) >= self.idle_most:
            victim = _first(self._idle, new)
            if victim is not None:
                self._close(victim, closing)
        return closing, False

    def _close(self, victim: Hashable, closing: list[Hashable]) -> None:
        self.busy(victim)  # being closed: never chosen twice
        closing.append(victim)
        self.closed_idle += 1


def _first(ordered: dict[Hashable, None], other_than: Hashable) -> Hashable | None:
    """The first key but `other_than` (the new connection, the last, is idle too)."""
    for key in ordered:
        if key is not other_than:
            return key
    return None
