"""Free TCP ports on 127.0.0.1 for the local stack, and probes of whether a port is taken."""

from __future__ import annotations

import random
import socket
from collections.abc import Iterable, Iterator
from pathlib import Path

LOOPBACK = "127.0.0.1"
# SeaweedFS serves gRPC on its HTTP port + 10000 unless told otherwise; the launcher passes that
# port explicitly too, but keeps the convention so a stray default can never land on a used port.
GRPC_PORT_OFFSET = 10_000
HIGHEST_TWIN_BASE = 65_535 - GRPC_PORT_OFFSET
# Listeners go below the kernel's ephemeral range: every outgoing connection on the machine takes
# its local port from that range, and could take a port chosen here before its server binds it,
# or while a server restarts on it. Linux's default range starts here; elsewhere it starts higher.
DEFAULT_EPHEMERAL_LOW = 32_768
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST_CHOSEN_PORT = 12_000
# Independent of `random.seed` (a test run may seed the module alike in every process).
_chooser = random.SystemRandom()
# Long enough for a loopback connect on a busy machine; a listener that takes longer is not ready.
CONNECT_PROBE_TIMEOUT_S = 0.5


def free_port(avoid_twin: bool = False) -> int:
    """A TCP port free on 127.0.0.1 right now; with `avoid_twin`, port + 10000 is free too."""
    return reserve_ports(1, avoid_twin=avoid_twin)[0]


def reserve_ports(count: int, *, avoid_twin: bool, exclude: Iterable[int] = ()) -> list[int]:
    """`count` distinct free ports (and twins). Every probe socket stays bound until all are
    picked, so no port (or twin) is handed out twice within one call."""
    excluded = set(exclude)
    held: list[socket.socket] = []
    ports: list[int] = []
    candidates = _candidates(avoid_twin)
    try:
        for _ in range(count * 100):
            if len(ports) == count:
                break
            probe = _bind(next(candidates))
            if probe is None:
                continue
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
    finally:
        for sock in held:
            sock.close()
    if len(ports) < count:
        raise RuntimeError(f"could not find {count} free loopback ports")
    return ports


def _candidates(avoid_twin: bool) -> Iterator[int]:
    """Random ports below the ephemeral range (with room for a twin there too); port 0, the
    kernel's own choice, when that range leaves no room."""
    highest = ephemeral_low() - 1 - (GRPC_PORT_OFFSET if avoid_twin else 0)
    while True:
        yield _chooser.randint(LOWEST_CHOSEN_PORT, highest) if highest > LOWEST_CHOSEN_PORT else 0


def ephemeral_low() -> int:
    """The first port of the kernel's range for outgoing connections."""
    try:
        return int(EPHEMERAL_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return DEFAULT_EPHEMERAL_LOW


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
