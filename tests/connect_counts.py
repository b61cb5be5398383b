"""Counting the connections a client tries, for tests that must show a client gives up on a
service that is down after a bounded number of attempts (the work), not after some seconds (a
clock, which a loaded machine stretches)."""

from __future__ import annotations

import socket
from typing import Any

import pytest


def connects_to(port: int, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The addresses of every connection this process tries to `port` from now on (until the
    test ends), in order."""
    tried: list[object] = []
    connect = socket.socket.connect

    def counted(sock: socket.socket, address: Any) -> None:
        if isinstance(address, tuple) and len(address) >= 2 and address[1] == port:
            tried.append(address)
        connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", counted)
    return tried
