"""The hosts of the cluster and the network that links them (namespaces.py makes the
namespaces).

A process runs under `ip netns exec` in a UTS namespace of its own carrying the host's name
(Celery names its node after it, the sweeper election its candidate), in a process group of its
own. A host is killed whole by SIGKILL to every process the kernel lists in its namespace.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
from collections.abc import Mapping, Sequence
from contextlib import suppress
from pathlib import Path

from devstack.testing.cluster.namespaces import (
    PREFIX,
    REGISTRY,
    NetnsError,
    NotPermitted,
    choose_subnet,
    ip,
    kill_all_in,
    namespace_pids,
    namespaces,
    remove_leftover,
    start_ticks,
)
from devstack.testing.cluster.processes import Proc


class Host:
    """A namespace on the bridge: one address, one host name, the processes started in it."""

    def __init__(self, network: Network, name: str, address: str, link: str) -> None:
        self.network, self.name, self.address, self.link = network, name, address, link
        self.namespace = f"{network.prefix}-{name}"
        self.home = network.workdir / name
        (self.home / "logs").mkdir(parents=True, exist_ok=True)
        self.processes: dict[str, Proc] = {}

    def spawn(
        self,
        label: str,
        argv: Sequence[str],
        env: Mapping[str, str],
        *,
        user: str | None = None,
        cwd: Path | None = None,
    ) -> Proc:
        """`argv` in this host, its output appended to logs/<label>.log."""
        wrapper = ["ip", "netns", "exec", self.namespace, "unshare", "--uts", "--",
                   "sh", "-c", 'hostname "$0" && exec "$@"', self.name]  # fmt: skip
        if user is not None:
            wrapper += ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", "--"]
        log = self.home / "logs" / f"{label}.log"
        with log.open("ab") as out:
            popen = subprocess.Popen(
                [*wrapper, *argv],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=dict(env),
                cwd=cwd or self.home,
                start_new_session=True,
            )
        proc = Proc(label, popen, log)
        self.processes[label] = proc
        return proc

    def run(self, label: str, argv: Sequence[str], env: Mapping[str, str], timeout: float) -> str:
        """`argv` in this host to its end; its output, or NetnsError with it if it failed."""
        proc = self.spawn(label, argv, env)
        try:
            code = proc.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.stop(label, timeout=1)
            raise NetnsError(f"{label} on {self.name} ran over {timeout:.0f} s") from None
        finally:
            self.processes.pop(label, None)
        if code != 0:
            raise NetnsError(f"{label} on {self.name} exited {code}:\n{self.log(label)}")
        return self.log(label)

    def pids(self) -> list[int]:
        return [pid for pid in namespace_pids(self.namespace) if pid != os.getpid()]

    def stop(self, label: str, timeout: float = 15.0) -> None:
        """SIGTERM to the process group of `label`, SIGKILL after `timeout`."""
        proc = self.processes.pop(label, None)
        if proc is None:
            return
        with suppress(ProcessLookupError):
            os.killpg(proc.popen.pid, signal.SIGTERM)
        try:
            proc.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            with suppress(ProcessLookupError):
                os.killpg(proc.popen.pid, signal.SIGKILL)
            proc.popen.wait(10)
        with suppress(ProcessLookupError):  # a pool child that outlived its parent
            os.killpg(proc.popen.pid, signal.SIGKILL)

    def kill(self) -> list[int]:
        """SIGKILL every process of the host at once, as a power cut would; the pids killed."""
        pids = self.pids()
        for proc in self.processes.values():
            with suppress(ProcessLookupError):
                os.killpg(proc.popen.pid, signal.SIGKILL)
        kill_all_in(self.namespace)
        for proc in self.processes.values():
            proc.popen.wait(10)
        self.processes.clear()
        return pids

    def cpu_seconds(self) -> dict[int, tuple[str, float]]:
        """CPU time (user + system) of each live process of the host: pid -> (name, seconds)."""
        tick = os.sysconf("SC_CLK_TCK")
        found = {}
        for pid in self.pids():
            try:
                name = Path(f"/proc/{pid}/comm").read_text().strip()
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # exited meanwhile
            found[pid] = (name, (int(fields[11]) + int(fields[12])) / tick)
        return found

    def freeze(self, frozen: bool) -> None:
        """SIGSTOP (or SIGCONT) every process of the host."""
        for pid in self.pids():
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP if frozen else signal.SIGCONT)

    def link_down(self) -> None:
        """Pull the cable: the switch's end of the host's veth goes down, the host keeps its
        address and its processes, and its packets go nowhere."""
        ip("-n", self.network.switch, "link", "set", self.link, "down")

    def link_up(self) -> None:
        ip("-n", self.network.switch, "link", "set", self.link, "up")

    def link_is_up(self) -> bool:
        shown = ip("-n", self.network.switch, "-o", "link", "show", self.link).stdout
        return "UP" in shown.partition("<")[2].partition(">")[0].split(",")

    def log(self, label: str, tail: int | None = None) -> str:
        path = self.home / "logs" / f"{label}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return text if tail is None else text[-tail:]


class Network:
    """The switch namespace with its bridge, and the hosts attached to it."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        taken = {name[len(PREFIX) : len(PREFIX) + 4] for name in namespaces()}
        self.run = secrets.token_hex(2)
        while self.run in taken or (REGISTRY / f"{self.run}.json").exists():
            self.run = secrets.token_hex(2)
        self.prefix = f"{PREFIX}{self.run}"
        self.switch = f"{self.prefix}-switch"
        self.bridge = f"tjbr{self.run}"
        self.subnet = choose_subnet()
        self.hosts: dict[str, Host] = {}
        self.leftovers: list[str] = []
        self._opened = False

    def address(self, octet: int) -> str:
        return str(self.subnet.network_address + octet)

    def open(self) -> None:
        """Register the run, then make the switch; NotPermitted if namespaces are refused."""
        try:
            REGISTRY.mkdir(parents=True, exist_ok=True)
            self._write_record()
        except PermissionError as exc:  # not root: `ip netns add` would be refused too
            raise NotPermitted(f"network namespaces need root here: {exc}") from exc
        done = ip("netns", "add", self.switch, check=False)
        if done.returncode != 0:
            (REGISTRY / f"{self.run}.json").unlink(missing_ok=True)
            reason = done.stderr.strip()
            if "Permission denied" in reason or "Operation not permitted" in reason:
                raise NotPermitted(f"`ip netns add` is not permitted here: {reason}")
            raise NetnsError(f"ip netns add {self.switch}: {reason}")
        self._opened = True
        ip("-n", self.switch, "link", "set", "lo", "up")
        ip("-n", self.switch, "link", "add", self.bridge, "type", "bridge")
        ip("-n", self.switch, "link", "set", self.bridge, "up")

    def add_host(self, name: str, octet: int) -> Host:
        """A namespace with `lo` and an eth0 on the bridge at the subnet's .`octet`."""
        host = Host(self, name, self.address(octet), f"{self.prefix}s{octet}")
        ip("netns", "add", host.namespace)
        self.hosts[name] = host
        ns = ("-n", host.namespace)
        ip(*ns, "link", "set", "lo", "up")
        ip(*ns, "link", "add", "eth0", "type", "veth", "peer", "name", host.link,
           "netns", self.switch)  # fmt: skip
        ip("-n", self.switch, "link", "set", host.link, "master", self.bridge)
        ip("-n", self.switch, "link", "set", host.link, "up")
        ip(*ns, "addr", "add", f"{host.address}/{self.subnet.prefixlen}", "dev", "eth0")
        ip(*ns, "link", "set", "eth0", "up")
        return host

    def leave_behind(self, path: Path) -> None:
        """A file or directory outside the work dir to remove at close (or by a stale sweep)."""
        self.leftovers.append(str(path))
        self._write_record()

    def _write_record(self) -> None:
        record = {
            "pid": os.getpid(),
            "ticks": start_ticks(os.getpid()),
            "subnet": str(self.subnet),
            "leftovers": self.leftovers,
        }
        (REGISTRY / f"{self.run}.json").write_text(json.dumps(record))

    def close(self) -> list[str]:
        """Kill every process of every host, remove every namespace and listed file; the
        problems met on the way (each step is tried whatever failed before)."""
        problems = []
        for host in reversed(list(self.hosts.values())):
            try:
                host.kill()
            except Exception as exc:
                problems.append(f"killing {host.name}: {exc}")
            done = ip("netns", "del", host.namespace, check=False)
            if done.returncode != 0:
                problems.append(f"ip netns del {host.namespace}: {done.stderr.strip()}")
        self.hosts.clear()
        if self._opened:
            kill_all_in(self.switch)
            done = ip("netns", "del", self.switch, check=False)
            if done.returncode != 0:
                problems.append(f"ip netns del {self.switch}: {done.stderr.strip()}")
            self._opened = False
        for path in self.leftovers:
            remove_leftover(Path(path))
        (REGISTRY / f"{self.run}.json").unlink(missing_ok=True)
        return problems
