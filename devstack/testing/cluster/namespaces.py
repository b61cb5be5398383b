"""The cluster's network: Linux network namespaces on a private bridge, named so that a run's
leftovers can be found and removed.

The network: a "switch" namespace holds a bridge; each host is a namespace of its own whose eth0
is one end of a veth pair, the other end attached to the bridge inside the switch. Nothing is
added to the machine's own namespace, so traffic stays between the namespaces made here, on a
private /24 chosen not to overlap the machine's routes. The test process reaches the hosts from
the "client" host: the thread that builds the cluster enters that namespace (setns), and the
threads it starts meanwhile are born there.

Every namespace is named PREFIX + the run's id + the host; `Network.close()` (network.py)
removes all of them (and the veths and the bridge go with them), even after a failure, and
`sweep_stale()` removes those of an earlier run whose process is gone.
"""

from __future__ import annotations

import ctypes
import ipaddress
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

PREFIX = "tjc"  # every namespace this harness makes: tjc<run>-<host>
REGISTRY = Path("/run/tjcluster")  # <run>.json: the owning process and what it leaves behind
SUBNETS = ipaddress.IPv4Network("10.231.0.0/16")  # a /24 of it per run
CLONE_NEWNET = 0x40000000


class NetnsError(RuntimeError):
    """An `ip` command failed, or a process of the cluster did not start."""


class NotPermitted(NetnsError):
    """`ip netns add` is refused on this machine (no CAP_SYS_ADMIN, a sandbox without it)."""


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=60)
    if check and done.returncode != 0:
        raise NetnsError(f"ip {' '.join(args)}: {done.stderr.strip() or done.returncode}")
    return done


def namespaces() -> list[str]:
    return [line.split()[0] for line in ip("netns", "list").stdout.splitlines() if line.strip()]


def namespace_pids(namespace: str) -> list[int]:
    done = ip("netns", "pids", namespace, check=False)
    return [int(pid) for pid in done.stdout.split()] if done.returncode == 0 else []


_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"setns: {os.strerror(error)}")


@contextmanager
def inside(namespace: str) -> Iterator[None]:
    """The calling thread in `namespace`'s network until the block ends; sockets opened and
    threads started meanwhile stay there."""
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        target = os.open(f"/run/netns/{namespace}", os.O_RDONLY)
        try:
            _setns(target)
        finally:
            os.close(target)
        try:
            yield
        finally:
            _setns(home)
    finally:
        os.close(home)


def start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (None if it is gone): with the pid,
    it names one process even after the pid is reused."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _record(run: str) -> dict[str, Any] | None:
    try:
        record: dict[str, Any] = json.loads((REGISTRY / f"{run}.json").read_text())
    except (OSError, ValueError):
        return None
    return record


def _owner_alive(record: dict[str, Any] | None) -> bool:
    return record is not None and start_ticks(int(record["pid"])) == record.get("ticks")


def sweep_stale() -> list[str]:
    """Remove what an earlier run left when its process died before its teardown: namespaces
    named by this harness whose run has no live owner, with every process inside, and the
    files its record lists. Returns the namespaces removed."""
    pattern = re.compile(rf"{PREFIX}([0-9a-f]{{4}})-[a-z0-9]+")
    removed = []
    for name in namespaces():
        match = pattern.fullmatch(name)
        if match is None or _owner_alive(_record(match[1])):
            continue
        kill_all_in(name)
        ip("netns", "del", name, check=False)
        removed.append(name)
    for path in REGISTRY.glob("*.json") if REGISTRY.is_dir() else []:
        record = _record(path.stem)
        if _owner_alive(record):
            continue
        for leftover in (record or {}).get("leftovers", []):
            remove_leftover(Path(leftover))
        path.unlink(missing_ok=True)
    return removed


def kill_all_in(namespace: str, timeout: float = 10.0) -> None:
    """SIGKILL every process in the namespace but this one (whose thread may have entered it)."""
    deadline = time.monotonic() + timeout
    while pids := [pid for pid in namespace_pids(namespace) if pid != os.getpid()]:
        for pid in pids:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if time.monotonic() > deadline:
            raise NetnsError(f"processes {pids} of {namespace} survive SIGKILL")
        time.sleep(0.05)


def remove_leftover(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _taken_networks() -> list[ipaddress.IPv4Network]:
    """The machine's own routes and addresses, and the subnets of other live runs."""
    taken = []
    lines = ip("-4", "-o", "route", "show", "table", "all").stdout.splitlines()
    lines += [" ".join(line.split()[3:4]) for line in ip("-4", "-o", "addr").stdout.splitlines()]
    kinds = {"local", "broadcast", "unicast", "multicast", "anycast", "blackhole", "unreachable",
             "prohibit", "throw", "nat"}  # fmt: skip
    for line in lines:
        words = line.split()
        if words and words[0] in kinds:
            words = words[1:]
        if not words or words[0] == "default":
            continue
        with suppress(ValueError):
            taken.append(ipaddress.ip_network(words[0], strict=False))
    for path in REGISTRY.glob("*.json") if REGISTRY.is_dir() else []:
        record = _record(path.stem)
        if _owner_alive(record) and record is not None:
            taken.append(ipaddress.ip_network(record["subnet"]))
    return [net for net in taken if isinstance(net, ipaddress.IPv4Network)]


def choose_subnet() -> ipaddress.IPv4Network:
    taken = _taken_networks()
    candidates = list(SUBNETS.subnets(new_prefix=24))
    secrets.SystemRandom().shuffle(candidates)
    for net in candidates:
        if not any(net.overlaps(other) for other in taken):
            return net
    raise NetnsError(f"every /24 of {SUBNETS} overlaps a route of this machine")
