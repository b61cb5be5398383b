"""Ports chosen for local listeners stay out of the kernel's range for outgoing connections."""

from __future__ import annotations

import socket
from contextlib import closing
from itertools import chain, repeat
from pathlib import Path

import pytest

from devstack import ports
from devstack.ports import GRPC_PORT_OFFSET, LOOPBACK, LOWEST_CHOSEN_PORT, reserve_ports


def test_chosen_ports_and_their_twins_lie_below_the_ephemeral_range() -> None:
    low = ports.ephemeral_low()
    chosen = reserve_ports(20, avoid_twin=True)
    assert len(set(chosen)) == 20
    assert all(port >= LOWEST_CHOSEN_PORT and port + GRPC_PORT_OFFSET < low for port in chosen)
    assert not set(chosen) & {port + GRPC_PORT_OFFSET for port in chosen}
    single = reserve_ports(20, avoid_twin=False)
    assert all(LOWEST_CHOSEN_PORT <= port < low for port in single)


def test_a_taken_port_or_twin_is_never_chosen(monkeypatch: pytest.MonkeyPatch) -> None:
    with (
        closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as base,
        closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as twin,
    ):
        base.bind((LOOPBACK, 0))
        twin.bind((LOOPBACK, 0))
        taken = base.getsockname()[1]
        twin_taken = twin.getsockname()[1]
        offered = chain([taken, twin_taken - GRPC_PORT_OFFSET], repeat(0))
        monkeypatch.setattr(ports, "_candidates", lambda avoid_twin: offered)
        [port] = reserve_ports(1, avoid_twin=True, exclude=())
    assert port not in (taken, twin_taken - GRPC_PORT_OFFSET)


def test_the_kernel_chooses_when_the_ephemeral_range_leaves_no_room(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wide = tmp_path / "ip_local_port_range"
    wide.write_text("1024\t65535\n")
    monkeypatch.setattr(ports, "EPHEMERAL_RANGE_FILE", wide)
    assert ports.ephemeral_low() == 1024
    assert len(set(reserve_ports(5, avoid_twin=True))) == 5


def test_an_unreadable_range_falls_back_to_linuxs_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ports, "EPHEMERAL_RANGE_FILE", tmp_path / "missing")
    assert ports.ephemeral_low() == ports.DEFAULT_EPHEMERAL_LOW
