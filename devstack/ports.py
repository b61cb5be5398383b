"""Free TCP ports on 127.0.0.1 for the local stack, and probes of whether a port is taken."""

from __future__ import annotations

import socket
from collections.abc import Iterable

LOOPBACK = "127.0.0.1"
# SeaweedFS serves gRPC on its HTTP port + 10000 unless told otherwise; the launcher passes that
# port explicitly too, but keeps the convention so a stray default can never land on a used port.
GRPC_PORT_OFFSET = 10_000
HIGHEST_TWIN_BASE = 65_535 - GRPC_PORT_OFFSET
# Long enough for a loopback connect on a busy machine; a listener that takes longer is not ready.
CONNECT_PROBE_TIMEOUT_S = 0.5


def free_port(avoid_twin: bool = False) -> int:
    """A TCP port free on 127.0.0.1 right now; with `avoid_twin`, port + 10000 is free too."""
    return reserve_ports(1, avoid_twin=avoid_twin)[0]


def reserve_ports(count: int, *, avoid_twin: bool, exclude: Iterable[int] = ()) -> list[int]:
    """`count` distinct free ports (and twins). Every probe socket stays bound until all are
    picked, so the kernel cannot hand out the same port twice within one call."""
    excluded = set(exclude)
    held: list[socket.socket] = []
    ports: list[int] = []
    try:
        for _ in range(count * 100):
            if len(ports) == count:
                break
            probe = _bind(0)
            assert probe is not None  # port 0 always binds
            held.append(probe)
            port: int = probe.getsockname()[1]
            if port in excluded:
                continue
            if avoid_twin:
                twin = _bind(port + GRPC_PORT_OFFSET) if port <= HIGHEST_TWIN_BASE else None
                if twin is None or port + GRPC_PORT_OFFSET in excluded:
                    continue
                held.append(twin)
            ports.append(port)
        else:
            raise RuntimeError(f"could not find {count} free loopback ports")
    finally:
        for sock in held:
            sock.close()
    return ports


def port_is_free(port: int) -> bool:
    """True when a server could bind `port` now. SO_REUSEADDR, as the servers bind: TIME_WAIT
    left by a stopped predecessor is fine, a live listener is not."""
    sock = _bind(port, reuse_address=True)
    if sock is None:
        return False
    sock.close()
    return True


def port_accepts(port: int) -> bool:
    """True when something on 127.0.0.1 accepts a TCP connection on `port`."""
    try:
        with socket.create_connection((LOOPBACK, port), timeout=CONNECT_PROBE_TIMEOUT_S):
            return True
    except OSError:
        return False


def _bind(port: int, reuse_address: bool = False) -> socket.socket | None:
    # Without SO_REUSEADDR a probe is stricter than the servers, and (on Linux) two unlistened
    # probes can never share a port, which reserve_ports relies on.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if reuse_address:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((LOOPBACK, port))
    except OSError:
        sock.close()
        return None
    return sock
