"""Hosts for the cluster test and its benchmark: Linux network namespaces on a private bridge,
each with an address and a host name of its own, and the stack's roles started inside them.

The network: a "switch" namespace holds a bridge; each host is a namespace of its own whose eth0
is one end of a veth pair, the other end attached to the bridge inside the switch. Nothing is
added to the machine's own namespace, so traffic stays between the namespaces made here, on a
private /24 chosen not to overlap the machine's routes. The test process reaches the hosts from
the "client" host: the thread that builds the cluster enters that namespace (setns), and the
threads it starts meanwhile are born there.

Every namespace is named PREFIX + the run's id + the host; `Network.close()` removes all of them
(and the veths and the bridge go with them), even after a failure, and `sweep_stale()` removes
those of an earlier run whose process is gone.

A process runs under `ip netns exec` in a UTS namespace of its own carrying the host's name
(Celery names its node after it, the sweeper election its candidate), in a process group of its
own. A host is killed whole by SIGKILL to every process the kernel lists in its namespace.
"""

from __future__ import annotations

import ast
import base64
import ctypes
import glob
import hashlib
import ipaddress
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import httpx
import psycopg
import redis
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from core import clock
from core.tlog import generate_key
from devstack import http1
from devstack.seaweedfs import weed_binary
from infra.api_client import Answer, ApiError, Client, Retry
from infra.compose import make_celery
from infra.leader import SWEEPER_LOCK
from infra.queues import live_backlog
from infra.settings import Settings
from judge import Lexicon
from judge.wordytaire import default_layout, judge
from judge.wordytaire.generator import WordIndex, generate
from tests.conftest import shared_list
from tests.log_checks import entry_problems

PREFIX = "tjc"  # every namespace this harness makes: tjc<run>-<host>
REGISTRY = Path("/run/tjcluster")  # <run>.json: the owning process and what it leaves behind
SUBNETS = ipaddress.IPv4Network("10.231.0.0/16")  # a /24 of it per run
CLONE_NEWNET = 0x40000000
TILEJUDGE = str(Path(sys.executable).parent / "tilejudge")
BUCKET = "tilejudge"
API_PORT = 8000
GRPC_OFFSET = 10_000  # weed's gRPC port is its HTTP port + 10000
WEED_COMPONENTS = ("master", "volume", "filer", "s3", "admin")
JUDGE_TASK = "tilejudge.judge_group"

# Deadlines short enough for a test run, in the relations production keeps: the hard time limit
# below the visibility timeout (Settings refuses otherwise), the soft limit a quarter earlier
# (15 s). A group judges in well under 3 s, but a worker host cut off mid-task gives up on its
# SQL and Redis calls only after their timeouts (libpq's 5 s TCP user timeout, Redis's 3 s
# twice) and asks for a retry some 12 s in: a soft limit due then could interrupt the child
# while it hands its result to the parent, and billiard's parent, reading half a message, stops
# the worker ("Unrecoverable error: UnicodeDecodeError"). Production's soft limit is 110 s.
TIMINGS = {
    "TILEJUDGE_VISIBILITY_TIMEOUT": "20",
    "TILEJUDGE_TASK_TIME_LIMIT": "19",
    "TILEJUDGE_REQUEUE_AFTER": "8",
    "TILEJUDGE_SWEEPER_LOCK_TTL": "3",
    "TILEJUDGE_RATE_LIMIT": "1000000",
    "TILEJUDGE_TEAM_BYTES_PER_DAY": "0",  # no daily storage quota either
}
# Addresses: the last octet of each host's address in the run's /24. The database hosts run
# PostgreSQL under Patroni with an etcd member each; the Redis hosts a Redis and a Sentinel
# each; the services host SeaweedFS and the third Sentinel.
OCTETS = {"services": 1, "db1": 2, "db2": 3, "db3": 4, "redis1": 5, "redis2": 6,
          "api1": 11, "api2": 12, "worker1": 21, "worker2": 22, "worker3": 23}  # fmt: skip
DATABASE_HOSTS = ("db1", "db2", "db3")
REDIS_HOSTS = ("redis1", "redis2")
REDIS_MASTER = "tilejudge"
CLIENT = ("client", 100)
START_TIMEOUT_S = 90.0  # a role or service on a loaded two-core machine


class NetnsError(RuntimeError):
    """An `ip` command failed, or a process of the cluster did not start."""


class NotPermitted(NetnsError):
    """`ip netns add` is refused on this machine (no CAP_SYS_ADMIN, a sandbox without it)."""


# --- namespaces ----------------------------------------------------------------------------------


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


def _start_ticks(pid: int) -> int | None:
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
    return record is not None and _start_ticks(int(record["pid"])) == record.get("ticks")


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
        _kill_all_in(name)
        ip("netns", "del", name, check=False)
        removed.append(name)
    for path in REGISTRY.glob("*.json") if REGISTRY.is_dir() else []:
        record = _record(path.stem)
        if _owner_alive(record):
            continue
        for leftover in (record or {}).get("leftovers", []):
            _remove(Path(leftover))
        path.unlink(missing_ok=True)
    return removed


def _kill_all_in(namespace: str, timeout: float = 10.0) -> None:
    """SIGKILL every process in the namespace but this one (whose thread may have entered it)."""
    deadline = time.monotonic() + timeout
    while pids := [pid for pid in namespace_pids(namespace) if pid != os.getpid()]:
        for pid in pids:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if time.monotonic() > deadline:
            raise NetnsError(f"processes {pids} of {namespace} survive SIGKILL")
        time.sleep(0.05)


def _remove(path: Path) -> None:
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


def _choose_subnet() -> ipaddress.IPv4Network:
    taken = _taken_networks()
    candidates = list(SUBNETS.subnets(new_prefix=24))
    secrets.SystemRandom().shuffle(candidates)
    for net in candidates:
        if not any(net.overlaps(other) for other in taken):
            return net
    raise NetnsError(f"every /24 of {SUBNETS} overlaps a route of this machine")


# --- hosts ---------------------------------------------------------------------------------------


@dataclass
class Proc:
    label: str
    popen: subprocess.Popen[bytes]
    log: Path
    started: float = field(default_factory=time.monotonic)

    @property
    def running(self) -> bool:
        return self.popen.poll() is None


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
        _kill_all_in(self.namespace)
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
        self.subnet = _choose_subnet()
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
            "ticks": _start_ticks(os.getpid()),
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
            _kill_all_in(self.switch)
            done = ip("netns", "del", self.switch, check=False)
            if done.returncode != 0:
                problems.append(f"ip netns del {self.switch}: {done.stderr.strip()}")
            self._opened = False
        for path in self.leftovers:
            _remove(Path(path))
        (REGISTRY / f"{self.run}.json").unlink(missing_ok=True)
        return problems


# --- the cluster -----------------------------------------------------------------------------


def _postgres_bin(name: str) -> str:
    found = sorted(
        glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    if not found:
        raise NetnsError(
            f"PostgreSQL's {name} not found under /usr/lib/postgresql/*/bin: "
            "apt-get install postgresql"
        )
    return found[-1]


def _role_env() -> dict[str, str]:
    """The test's environment without any setting of the stack or of weed's S3 identity."""
    dropped = ("TILEJUDGE_", "AWS_", "S3_")
    return {k: v for k, v in os.environ.items() if not k.startswith(dropped) and k != "REDIS_URL"}


def wait_for(
    condition: Callable[[], bool],
    timeout: float,
    what: str,
    *,
    alive: Proc | None = None,
    interval: float = 0.1,
) -> float:
    """Seconds until `condition` held; NetnsError naming `what` after `timeout`, or as soon as
    the process `alive` exits."""
    began = time.monotonic()
    while True:
        if condition():
            return time.monotonic() - began
        if alive is not None and not alive.running:
            raise NetnsError(
                f"waiting for {what}: the process exited with {alive.popen.returncode}:\n"
                + alive.log.read_text(errors="replace")[-3000:]
            )
        if time.monotonic() - began > timeout:
            raise NetnsError(f"waiting for {what}: not within {timeout:.0f} s")
        time.sleep(interval)


class Cluster:
    """The database hosts (Patroni), the Redis hosts (Sentinel), the services host (SeaweedFS
    and the third Sentinel), API hosts and worker hosts."""

    def __init__(self, network: Network) -> None:
        self.network = network
        self.client = network.add_host(*CLIENT)
        self.services = network.add_host("services", OCTETS["services"])
        address = self.services.address
        self.pg_password = secrets.token_urlsafe(18)
        self.redis_password = secrets.token_urlsafe(18)
        self.s3_key, self.s3_secret = f"tj{secrets.token_hex(8)}", secrets.token_urlsafe(24)
        self.admin_token = secrets.token_urlsafe(24)
        # (the groups build on this module's hosts: imported here, once both are loaded.)
        from tests.cluster.patroni import PatroniGroup
        from tests.cluster.sentinel import SentinelGroup

        self.databases = [network.add_host(name, OCTETS[name]) for name in DATABASE_HOSTS]
        self.redises = [network.add_host(name, OCTETS[name]) for name in REDIS_HOSTS]
        self.patroni = PatroniGroup(
            self.databases, app_user="tilejudge", app_password=self.pg_password
        )
        self.sentinel = SentinelGroup(
            self.redises,
            [*self.redises, self.services],
            password=self.redis_password,
            master_name=REDIS_MASTER,
        )
        # Every process finds the primaries by itself: a multi-host URL (tilejudge adds
        # target_session_attrs=read-write) and the sentinels.
        self.database_url = self.patroni.url("tilejudge").split("?", 1)[0]
        self.redis_url = self.sentinel.url(0)
        # Fixed ports in a namespace of its own, but weed names Unix sockets in /tmp after
        # them: ports of the run's own keep those apart from other weeds on the machine.
        base = 21_000 + (int(network.run, 16) % 400) * 10
        self.weed_ports = {c: base + n for n, c in enumerate(WEED_COMPONENTS)}
        self.s3_endpoint = f"http://{address}:{self.weed_ports['s3']}"
        self.session_key = secrets.token_hex(32)
        self.env = _role_env() | TIMINGS | {
            "REDIS_URL": self.redis_url,
            "TILEJUDGE_REDIS_MASTER": REDIS_MASTER,
            "TILEJUDGE_DATABASE_URL": self.database_url,
            "TILEJUDGE_S3_ENDPOINT": self.s3_endpoint,
            "TILEJUDGE_S3_BUCKET": BUCKET,
            "TILEJUDGE_S3_ACCESS_KEY": self.s3_key,
            "TILEJUDGE_S3_SECRET_KEY": self.s3_secret,
            "TILEJUDGE_ADMIN_TOKEN": self.admin_token,
            "TILEJUDGE_RECEIPT_KEY": secrets.token_urlsafe(24),
            # One key signs the logs whichever API host sequences (docs/transparency.md).
            "TILEJUDGE_LOG_KEY": generate_key("cluster.test")[0],
            "TILEJUDGE_API_PORT": str(API_PORT),
            "TILEJUDGE_API_WORKERS": "1",
            "TILEJUDGE_WORKERS": "1",
            "TILEJUDGE_STANDBY_WORKERS": "0",
        }  # fmt: skip
        self.apis: dict[str, Host] = {}
        self.workers: dict[str, Host] = {}
        self.judge_list_id = ""  # the contests' word list, registered before the workers start
        self.concurrency = 1  # judging processes per worker host
        self._control: Any = None

    # -- services -----------------------------------------------------------------------------

    def start_services(self) -> None:
        """SeaweedFS, the database hosts and the Redis hosts, started together, then each
        waited for: a Patroni leader with both replicas streaming, one synchronous (the
        database made and owned by the app's role; `tilejudge migrate` from an API host makes
        the schema), a Redis primary with its replica in sync and three agreeing Sentinels."""
        self._spawn_weed()
        self.patroni.start()
        self.sentinel.start()
        wait_for(self._bucket_answers, START_TIMEOUT_S, "SeaweedFS's S3 gateway",
                 alive=self.services.processes["weed"])  # fmt: skip

    def _postgres(self, database: str) -> psycopg.Connection[Any]:
        """A connection to the primary, found as the stack finds it: the first host of the
        multi-host URL that takes writes."""
        return psycopg.connect(self.patroni.url(database), autocommit=True, connect_timeout=3)

    def redis_client(self, timeout: float = 2.0) -> redis.Redis:
        """A client of the Redis primary the Sentinels name (asked again at each connection)."""
        return self.sentinel.master_client(timeout=timeout)

    def service_hosts(self) -> list[Host]:
        return [*self.databases, *self.redises]

    def heal_services(self) -> None:
        """Every database and Redis host linked, running and replicating again, whichever is
        primary now: a host a test killed is started again on its data (Patroni rewinds it,
        Sentinel makes it a replica)."""
        for host in [*self.service_hosts(), self.services]:
            if not host.link_is_up():
                host.link_up()
            host.freeze(False)
        for host, group in [*((h, self.patroni) for h in self.databases),
                            *((h, self.sentinel) for h in self.redises)]:  # fmt: skip
            if not all(label in host.processes and host.processes[label].running
                       for label in group.labels):  # fmt: skip
                host.kill()
                group.restart(host)
        for group, hosts in ((self.patroni, self.databases), (self.sentinel, self.redises)):
            primary = group.wait_primary(timeout=START_TIMEOUT_S)
            for host in hosts:
                if host.name != primary:
                    group.wait_replica(host.name, START_TIMEOUT_S)

    def _spawn_weed(self) -> None:
        data = self.services.home / "weed"
        data.mkdir(exist_ok=True)
        ports = self.weed_ports
        flags = [
            flag
            for c, port in ports.items()
            for flag in (f"-{c}.port={port}", f"-{c}.port.grpc={port + GRPC_OFFSET}")
        ]
        argv = [weed_binary(), "-logtostderr", f"-config_dir={data}", "mini", f"-dir={data}",
                f"-ip={self.services.address}", f"-ip.bind={self.services.address}", *flags,
                "-admin.ui=false", "-webdav=false", "-s3.port.iceberg=0", "-s3.port.lance=0",
                "-master.telemetry=false", "-volume.preStopSeconds=0", f"-bucket={BUCKET}"]  # fmt: skip
        # weed mini takes its S3 identity from these: with them set it refuses other keys.
        env = _role_env() | {
            "AWS_ACCESS_KEY_ID": self.s3_key,
            "AWS_SECRET_ACCESS_KEY": self.s3_secret,
        }
        sockets = [f"{c}-grpc-{port + GRPC_OFFSET}" for c, port in ports.items()]
        sockets += [f"{c}-{ports[c]}" for c in ("filer", "s3")]
        for name in sockets:
            self.network.leave_behind(Path(f"/tmp/seaweedfs-{name}.sock"))
        self.services.spawn("weed", argv, env, cwd=data)

    def s3(self) -> Any:
        return boto3.client(
            "s3", endpoint_url=self.s3_endpoint, region_name="us-east-1",
            aws_access_key_id=self.s3_key, aws_secret_access_key=self.s3_secret,
            config=Config(connect_timeout=1, read_timeout=5, retries={"max_attempts": 1},
                          s3={"addressing_style": "path"}),
        )  # fmt: skip

    def _bucket_answers(self) -> bool:
        client = self.s3()
        try:
            client.head_bucket(Bucket=BUCKET)
            return True
        except (ClientError, BotoCoreError):
            return False
        finally:
            client.close()

    # -- roles --------------------------------------------------------------------------------

    def role_env(self, host: Host) -> dict[str, str]:
        return self.env | {"TILEJUDGE_HOME": str(host.home / "home")}

    def migrate(self, host: Host) -> str:
        return host.run("migrate", [TILEJUDGE, "migrate"], self.role_env(host), START_TIMEOUT_S)

    def add_api(self, name: str) -> Host:
        host = self.network.add_host(name, OCTETS[name])
        home = host.home / "home"
        home.mkdir(parents=True, exist_ok=True)
        # The API hosts share the dashboard's session key, as docs/deploy.md has them do.
        (home / "session-key").write_text(self.session_key + "\n")
        (home / "session-key").chmod(0o600)
        self.apis[name] = host
        return host

    def start_api(self, name: str) -> Proc:
        host = self.apis[name]
        env = self.role_env(host) | {"TILEJUDGE_API_HOST": host.address}
        return host.spawn("api", [TILEJUDGE, "api"], env)

    def api_url(self, name: str) -> str:
        return f"http://{self.apis[name].address}:{API_PORT}"

    def api_ready(self, name: str) -> bool:
        try:
            return httpx.get(f"{self.api_url(name)}/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def wait_api(self, name: str, timeout: float = START_TIMEOUT_S) -> float:
        proc = self.apis[name].processes["api"]
        return wait_for(lambda: self.api_ready(name), timeout, f"{name}'s /readyz", alive=proc)

    def add_worker(self, name: str) -> Host:
        host = self.network.add_host(name, OCTETS[name])
        self.workers[name] = host
        return host

    def start_worker(self, name: str) -> Proc:
        host = self.workers[name]
        argv = [TILEJUDGE, "worker", "--concurrency", str(self.concurrency)]
        return host.spawn("worker", argv, self.role_env(host))

    @staticmethod
    def node(name: str) -> str:
        return f"tilejudge@{name}"

    @property
    def control(self) -> Any:
        """A Celery app of the test's own, for remote control (ping, inspect)."""
        if self._control is None:
            self._control = make_celery(Settings.from_env(self.env))
        return self._control

    def forget_control(self) -> None:
        """A new Celery app for the next remote control call: this one's broker connection
        failed (its Redis primary failed over), and the pool it came from is spent."""
        if self._control is not None:
            with suppress(Exception):
                self._control.close()
        self._control = None

    def worker_answers(self, name: str) -> bool:
        try:
            replies = self.control.control.ping(destination=[self.node(name)], timeout=0.5)
        except Exception:
            self.forget_control()
            return False
        return any(self.node(name) in reply for reply in replies or [])

    def wait_worker(self, name: str, timeout: float = START_TIMEOUT_S) -> float:
        proc = self.workers[name].processes["worker"]
        return wait_for(lambda: self.worker_answers(name), timeout, f"{name}'s Celery ping",
                        alive=proc, interval=0.05)  # fmt: skip

    def task_totals(
        self, names: Sequence[str] | None = None, wait: float = 30.0
    ) -> dict[str, dict[str, int]]:
        """Tasks each worker host has taken since it started, by task name (Celery's stats),
        asked again for up to `wait` s while a host does not answer or the broker connection
        fails (it reached a Redis primary that has since failed over: the next one asks the
        sentinels)."""
        nodes = [self.node(n) for n in (names or self.workers)]
        deadline = time.monotonic() + wait
        stats: dict[str, Any] = {}
        while True:
            try:
                stats = self.control.control.inspect(destination=nodes, timeout=1.5).stats() or {}
            except Exception:  # kombu's and redis-py's connection errors, however wrapped
                self.forget_control()
                stats = {}
            if set(nodes) <= set(stats) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        return {
            node.split("@", 1)[1]: {str(k): int(v) for k, v in (s.get("total") or {}).items()}
            for node, s in stats.items()
        }

    def active(self, name: str) -> list[dict[str, Any]]:
        """The tasks the worker host is running now."""
        node = self.node(name)
        # One host asked: its answer ends the wait (the timeout is for a host that is down).
        asked = self.control.control.inspect(destination=[node], timeout=1.0, limit=1)
        found = asked.active() or {}
        return list(found.get(node, []))

    @contextmanager
    def frozen(self, *names: str) -> Iterator[None]:
        """Worker hosts held still (SIGSTOP) while a backlog is queued for them."""
        for name in names:
            self.workers[name].freeze(True)
        try:
            yield
        finally:
            for name in names:
                self.workers[name].freeze(False)

    def cut_mid_task(
        self, name: str, cut: Callable[[], None], undo: Callable[[], None], tries: int = 5
    ) -> tuple[list[str], datetime]:
        """Wait until worker host `name` runs a task whose claims are taken (its uploads are
        judging in the store), `cut` it off at once, and return the submissions it still holds
        a second after the cut, with the cut's time. A task that recorded its results before
        the cut leaves nothing in flight: `undo` and try again while the backlog lasts.

        The claims are waited for, not only the task: a cut inside the claim's transaction,
        undone a second later, leaves that transaction to TCP's retransmissions, and the next
        tries would cut it again before it commits, until the server ends it (5 s idle)."""
        claimed: list[str] = []

        def claiming() -> bool:
            running = [sid for task in self.active(name) for sid in task_ids(task)]
            claimed[:] = self.still_judging(running) if running else []
            return bool(claimed)

        for _ in range(tries):
            wait_for(claiming, 30, f"{name} holding a claim", interval=0.01)
            cut()
            at = datetime.now(UTC)
            time.sleep(1.0)
            held = self.still_judging(claimed)
            if held:
                return held, at
            undo()
        raise NetnsError(f"{name} was never caught with a claim in flight in {tries} tries")

    def still_judging(self, ids: Sequence[str]) -> list[str]:
        rows = self.sql("SELECT id, state FROM submissions WHERE id = ANY(%s)", list(ids))
        return sorted(str(sid) for sid, state in rows if state == "judging")

    def live_backlog(self) -> int | None:
        try:
            with self.redis_client() as client:
                return live_backlog(client)
        except redis.RedisError:
            return None

    def unacked(self) -> int | None:
        try:
            with self.redis_client() as client:
                return int(client.hlen("unacked"))
        except redis.RedisError:
            return None

    def sweeper_holder(self) -> str | None:
        """The host name in the sweeper lock's value (host:pid:random), None while unheld."""
        try:
            with self.redis_client() as client:
                value = client.get(SWEEPER_LOCK)
        except redis.RedisError:
            return None
        return value.decode().split(":", 1)[0] if isinstance(value, bytes) else None

    def heal(self) -> None:
        """Every host as the fixture left it: links up, nothing frozen, the database and Redis
        hosts running and replicating, each API and worker process running (a test that failed
        midway may have left one down)."""
        for host in [*self.apis.values(), *self.workers.values()]:
            if not host.link_is_up():
                host.link_up()
            host.freeze(False)
        self.heal_services()
        for name, host in self.apis.items():
            api_proc = host.processes.get("api")
            if api_proc is None or not api_proc.running:
                host.kill()
                self.start_api(name)
        for name, host in self.workers.items():
            worker_proc = host.processes.get("worker")
            if worker_proc is None or not worker_proc.running:
                host.kill()
                self.start_worker(name)
        for name in self.apis:
            self.wait_api(name)
        for name in self.workers:
            self.wait_worker(name)

    # -- SQL and the API ----------------------------------------------------------------------

    def sql(self, query: str, *args: Any) -> list[tuple[Any, ...]]:
        with closing(self._postgres("tilejudge")) as conn:
            return list(conn.execute(query, args).fetchall())

    def admin(self, name: str | None = None, timeout: float = 120.0) -> httpx.Client:
        """An httpx client on a live API host (the first whose /readyz answers)."""
        names = [name] if name else [n for n in self.apis if "api" in self.apis[n].processes]
        url = next((self.api_url(n) for n in names if self.api_ready(n)), None)
        if url is None:
            raise NetnsError(f"no API host answers among {names}")
        headers = {"Authorization": f"Bearer {self.admin_token}"}
        return httpx.Client(base_url=url, headers=headers, timeout=timeout)

    @staticmethod
    def _ok(answer: httpx.Response) -> dict[str, Any]:
        if answer.is_error:
            raise NetnsError(
                f"{answer.request.method} {answer.request.url}: HTTP {answer.status_code} "
                f"{answer.text[:500]}"
            )
        body: dict[str, Any] = answer.json()
        return body

    def register_lexicon(self, name: str, words: bytes) -> str:
        with self.admin() as http:
            made = http.post("/v1/lexicons", params={"name": name}, content=words,
                             headers={"Content-Type": "text/plain"})  # fmt: skip
            return str(self._ok(made)["id"])

    def open_contest(self, contest: str, lexicon: str, teams: int) -> list[str]:
        """A contest open for a day on `lexicon` (id or name), with `teams` teams; their tokens."""
        now = datetime.now(UTC)
        body = {
            "id": contest,
            "title": f"Cluster {contest}",
            "lexicon": lexicon,
            "opens_at": clock.format_time(now - timedelta(hours=1)),
            "closes_at": clock.format_time(now + timedelta(days=1)),
        }
        with self.admin() as http:
            self._ok(http.post("/v1/contests", json=body))
            return [
                str(
                    self._ok(
                        http.post(f"/v1/contests/{contest}/teams", json={"name": f"team-{n}"})
                    )["token"]
                )
                for n in range(teams)
            ]

    def states(self, contest: str) -> dict[str, int]:
        rows = self.sql(
            "SELECT state, COUNT(*) FROM submissions WHERE contest_id = %s GROUP BY state", contest
        )
        return {str(state): int(n) for state, n in rows}

    def wait_judged(self, contest: str, count: int, timeout: float) -> float:
        """Seconds until `count` submissions of the contest are judged or failed, none pending."""

        def done() -> bool:
            states = self.states(contest)
            final = states.get("judged", 0) + states.get("failed", 0)
            return final >= count and final == sum(states.values())

        try:
            return wait_for(
                done, timeout, f"{count} submissions of {contest} judged", interval=0.25
            )
        except NetnsError as exc:
            raise NetnsError(f"{exc}; states now {self.states(contest)}") from None

    def judged_at(self, ids: Sequence[str]) -> dict[str, datetime]:
        rows = self.sql(
            "SELECT id, judged_at FROM submissions WHERE id = ANY(%s) AND state = 'judged'",
            list(ids),
        )
        return {str(sid): clock.parse_time(at) for sid, at in rows}

    def quiet(self, timeout: float = 30.0) -> None:
        """Wait (bounded) until the broker holds nothing waiting or unacknowledged: redelivered
        and duplicate messages have run, and found their work done."""
        with suppress(NetnsError):
            wait_for(lambda: self.live_backlog() == 0 and self.unacked() == 0, timeout,
                     "the broker to drain", interval=0.25)  # fmt: skip


@contextmanager
def cluster(
    workdir: Path, apis: int = 2, workers: int = 2, concurrency: int = 1
) -> Iterator[Cluster]:
    """The services host, `apis` API hosts and `workers` worker hosts (`concurrency` judging
    processes each), all up and ready, with
    the judge's word list registered before the workers start (so they preload it). The calling
    thread stays in the client host's network until the block ends; everything is torn down
    whatever happens. NotPermitted when this machine refuses network namespaces."""
    sweep_stale()
    network = Network(workdir)
    network.open()
    try:
        with _client_of(network) as made:
            made.concurrency = concurrency
            made.start_services()
            names = [f"api{n}" for n in range(1, apis + 1)]
            for name in names:
                made.add_api(name)
            made.migrate(made.apis[names[0]])
            for name in names:
                made.start_api(name)
            for name in names:
                made.wait_api(name)
            made.judge_list_id = made.register_lexicon(
                "words_alpha", shared_list("words_alpha.txt").read_bytes()
            )
            for n in range(1, workers + 1):
                made.add_worker(f"worker{n}")
                made.start_worker(f"worker{n}")
            for n in range(1, workers + 1):
                made.wait_worker(f"worker{n}")
            yield made
    finally:
        problems = network.close()
        if problems:
            raise NetnsError("teardown: " + "; ".join(problems))


@contextmanager
def _client_of(network: Network) -> Iterator[Cluster]:
    made = Cluster(network)
    with inside(made.client.namespace):
        try:
            yield made
        finally:
            if made._control is not None:
                with suppress(Exception):
                    made._control.close()


def task_ids(task: Mapping[str, Any]) -> list[str]:
    """The submission ids of a running judge_group task, as `inspect active` shows it."""
    args = task.get("args") or []
    if isinstance(args, str):  # some Celery versions show the repr
        args = ast.literal_eval(args)
    return [str(sid) for sid in args[0]] if args and isinstance(args[0], list) else []


def judged_by(
    before: Mapping[str, Mapping[str, int]], after: Mapping[str, Mapping[str, int]], task: str
) -> dict[str, int]:
    """Tasks named `task` each worker host took between two `task_totals`."""
    return {
        name: after.get(name, {}).get(task, 0) - before.get(name, {}).get(task, 0) for name in after
    }


# --- uploads and the proof ------------------------------------------------------------------

# How a client sends an upload again after no answer or a 502, 503 or 504: to the next API host
# in turn, at once and then with short pauses, for about half a minute at most.
FAILOVER = Retry(attempts=24, first_pause=0.1, longest_pause=2.0, follow_retry_after=False)


@dataclass(frozen=True)
class Corpus:
    """Hidden uploads and the offline judge's total for each."""

    data: list[bytes]
    expected: list[int]
    teams: int


_INDEXES: dict[str, WordIndex] = {}
# Generated games by (lexicon id, seed): the longest asked so far, and its length in moves.
_GAMES: dict[tuple[str, int], tuple[bytes, int]] = {}


def make_corpus(lexicon: Lexicon, uploads: int, *, teams: int, moves: int, seed: int) -> Corpus:
    """Generated games, distinct per team (a team's same bytes are one submission), each judged
    offline with `lexicon` and the default layout.

    Game n of a seed is the same whatever the number of moves: the bot's first k moves do not
    depend on how many follow. So corpora of one seed share their games, generated once (most
    of a corpus's cost), the shorter ones as the first lines of the longer."""
    data: list[bytes] = []
    seen: set[tuple[int, bytes]] = set()
    for n in range(uploads):
        one = _game(lexicon, seed * 1_000_003 + n, moves)
        while (n % teams, one) in seen:
            one += b"\n"  # a blank line changes the bytes, not the score
        seen.add((n % teams, one))
        data.append(one)
    layout = default_layout()
    return Corpus(data, [judge(d, lexicon, layout).total for d in data], teams)


def _game(lexicon: Lexicon, seed: int, moves: int) -> bytes:
    """`generate`'s game of `moves` moves (fewer if the bag runs out) for this seed."""
    known = _GAMES.get((lexicon.id, seed))
    if known is None or known[1] < moves:
        if lexicon.id not in _INDEXES:
            _INDEXES[lexicon.id] = WordIndex.build(lexicon.words)
        index = _INDEXES[lexicon.id]
        made = generate(index, default_layout(), seed=seed, moves=moves, illegal_share=0.1)
        known = _GAMES[lexicon.id, seed] = (made, moves)
    return b"".join(known[0].splitlines(keepends=True)[:moves])


@dataclass
class Sent:
    index: int
    team: int
    outcome: str = "not sent"
    submission: str | None = None
    host: str | None = None  # the API host whose 202 it got
    duplicate: bool = False  # that host said the same bytes were in already
    acked_at: float | None = None  # time.monotonic() at its 202
    tries: list[tuple[str, str]] = field(default_factory=list)  # (host, outcome) per attempt

    @property
    def acknowledged(self) -> bool:
        return self.outcome == "202"

    @property
    def failed_over(self) -> bool:
        """Acknowledged by another host than the one it was first sent to."""
        return self.acknowledged and self.host != self.tries[0][0]


class Uploads:
    """A corpus sent by `concurrency` client threads, upload n as team n % T, first to API host
    n % H, then on each failed attempt to the next host (FAILOVER). Every attempt is kept."""

    def __init__(
        self,
        urls: Mapping[str, str],
        contest: str,
        tokens: Sequence[str],
        corpus: Corpus,
        *,
        concurrency: int = 8,
        timeout: float = 180.0,
        request_timeout: float = 10.0,
        rate: float | None = None,
    ) -> None:
        """`rate`: at most this many uploads started a second (upload n not before n / rate s),
        so the burst lasts at least len(corpus) / rate s however fast the hosts answer."""
        self.urls, self.contest, self.tokens, self.corpus = dict(urls), contest, tokens, corpus
        self.rate = rate
        self.concurrency, self.request_timeout = concurrency, request_timeout
        self.timeout = timeout
        self.sent = [Sent(n, n % len(tokens)) for n in range(len(corpus.data))]
        self.failure: BaseException | None = None
        self.started = 0.0
        self.elapsed = 0.0
        self._todo = iter(self.sent)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> Uploads:
        """Send in the background (threads born in the calling thread's network)."""
        self._thread = threading.Thread(target=self.run, name="cluster-uploads", daemon=True)
        self._thread.start()
        return self

    def wait(self) -> list[Sent]:
        assert self._thread is not None
        self._thread.join(self.timeout + 60)
        if self._thread.is_alive():
            raise NetnsError(f"the uploads ran over {self.timeout + 60:.0f} s")
        if self.failure is not None:
            raise self.failure
        return self.sent

    def run(self) -> list[Sent]:
        self.started = time.monotonic()
        deadline = self.started + self.timeout
        clients = [
            threading.Thread(target=self._client, args=(deadline,), name=f"cluster-client-{n}")
            for n in range(min(self.concurrency, len(self.sent)))
        ]
        for thread in clients:
            thread.start()
        for thread in clients:
            thread.join()
        self.elapsed = time.monotonic() - self.started
        return self.sent

    def acknowledged(self) -> list[Sent]:
        return [s for s in self.sent if s.acknowledged]

    def _next(self) -> Sent | None:
        with self._lock:
            return next(self._todo, None)

    def _client(self, deadline: float) -> None:
        clients = {name: Client(http1.Connection(url)) for name, url in self.urls.items()}
        try:
            while (sent := self._next()) is not None and time.monotonic() < deadline:
                if self.rate is not None:
                    time.sleep(max(0.0, self.started + sent.index / self.rate - time.monotonic()))
                self._send(clients, sent, deadline)
        except BaseException as exc:
            self.failure = exc
        finally:
            for api in clients.values():
                api.transport.close()

    def _send(self, clients: Mapping[str, Client], sent: Sent, deadline: float) -> None:
        names = list(clients)
        first = sent.index % len(names)
        order = names[first:] + names[:first]
        data, token = self.corpus.data[sent.index], self.tokens[sent.team]

        def attempt() -> Answer:
            host = order[len(sent.tries) % len(order)]
            timeout = max(1.0, min(self.request_timeout, deadline - time.monotonic()))
            try:
                answer = clients[host].submit(self.contest, data, token=token, timeout=timeout)
            except ApiError as exc:
                sent.tries.append((host, exc.outcome))
                sent.outcome = exc.outcome
                raise
            sent.tries.append((host, str(answer.status)))
            sent.outcome, sent.host = str(answer.status), host
            return answer

        try:
            answer = FAILOVER.run(attempt, deadline=deadline)
        except ApiError:
            return
        if answer.status == 202:
            sent.acked_at = time.monotonic()
            sent.submission = str(answer.json()["id"])
            sent.duplicate = answer.headers.get("x-tilejudge-duplicate") == "true"


def judged_once_problems(
    cluster: Cluster, contest: str, sent: Sequence[Sent], corpus: Corpus
) -> list[str]:
    """What is wrong, one line each: every acknowledged upload, and every other submission the
    contest holds, must be judged, with exactly one result under the live ruleset and exactly
    one `submission.judged` event, both with the offline judge's score; and no two uploads may
    share a submission."""
    rows = cluster.sql(
        "SELECT s.id, s.sha256, s.state, s.attempts, s.failure, "
        "(SELECT COUNT(*) FROM results r WHERE r.submission_id = s.id "
        " AND r.lexicon_id = c.lexicon_id AND r.layout_id = c.layout_id), "
        "(SELECT MIN(r.score) FROM results r WHERE r.submission_id = s.id "
        " AND r.lexicon_id = c.lexicon_id AND r.layout_id = c.layout_id) "
        "FROM submissions s JOIN contests c ON c.id = s.contest_id WHERE s.contest_id = %s",
        contest,
    )
    events: dict[str, list[int]] = {}
    for sid, data in cluster.sql(
        "SELECT submission_id, data FROM events WHERE type = 'submission.judged' "
        "AND contest_id = %s ORDER BY id",
        contest,
    ):
        events.setdefault(str(sid), []).append(int(json.loads(data)["score"]))
    by_sha: dict[str, set[int]] = {}
    for n, data in enumerate(corpus.data):
        by_sha.setdefault(hashlib.sha256(data).hexdigest(), set()).add(corpus.expected[n])
    problems = []
    stored = {}
    for sid, sha, state, attempts, failure, results, score in rows:
        stored[str(sid)] = state
        wanted = by_sha.get(sha)
        if wanted is None:
            problems.append(f"submission {sid}: bytes that are not in the corpus")
            continue
        if state != "judged":
            problems.append(f"submission {sid} is {state} after {attempts} attempts: {failure}")
        if results != 1 or score not in wanted:
            problems.append(
                f"submission {sid}: {results} results under the live ruleset, score {score}, "
                f"offline judge {sorted(wanted)}"
            )
        scores = events.get(str(sid), [])
        if len(scores) != 1 or scores[0] not in wanted:
            problems.append(
                f"submission {sid}: submission.judged events with scores {scores}, offline "
                f"judge {sorted(wanted)}"
            )
    owners: dict[str, list[int]] = {}
    for one in sent:
        if not one.acknowledged:
            continue
        assert one.submission is not None
        owners.setdefault(one.submission, []).append(one.index)
        if one.submission not in stored:
            problems.append(f"upload {one.index} was acknowledged as {one.submission}, not stored")
    problems += [
        f"uploads {indexes} got one submission {sid}"
        for sid, indexes in owners.items()
        if len(indexes) > 1
    ]
    return problems


def log_problems(cluster: Cluster, contest: str, settle_s: float = 15.0) -> list[str]:
    """What is wrong with the contest's transparency log, one line each: its leaves must be
    numbered without gap or repeat, hold one upload entry and one verdict entry for each
    submission (with the result's score), and every live API host must serve the same signed
    checkpoint and the same bundles, whose entries hash to its root."""
    from core.tlog import bundles_for, decode_bundle, leaf_hash, root, tile_path

    rows = cluster.sql(
        "SELECT leaf, entry FROM log_entries WHERE contest_id = %s ORDER BY leaf", contest
    )
    problems = entry_problems(
        rows,
        cluster.sql(
            "SELECT r.submission_id, r.score FROM results r JOIN submissions s ON "
            "s.id = r.submission_id JOIN contests c ON c.id = s.contest_id WHERE s.contest_id = "
            "%s AND r.lexicon_id = c.lexicon_id AND r.layout_id = c.layout_id",
            contest,
        ),
    )
    served = {}
    deadline = time.monotonic() + settle_s
    live = [n for n in cluster.apis if "api" in cluster.apis[n].processes and cluster.api_ready(n)]
    for name in live:
        base = f"{cluster.api_url(name)}/v1/contests/{contest}/log"
        while True:
            checkpoint = httpx.get(f"{base}/checkpoint", timeout=10).text
            size = int(checkpoint.split("\n")[1])
            if size == len(rows) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        bundles = [
            httpx.get(f"{base}/{tile_path(b)}", timeout=10).content for b in bundles_for(size)
        ]
        entries = [
            e for b, data in zip(bundles_for(size), bundles) for e in decode_bundle(data, b.width)
        ]
        served[name] = (checkpoint, entries)
        if size != len(rows):
            problems.append(
                f"{name} serves a checkpoint of {size} entries, the log holds {len(rows)}"
            )
        signed_root = base64.b64decode(checkpoint.split("\n")[2])
        if root([leaf_hash(e) for e in entries]) != signed_root:
            problems.append(f"{name} serves bundles that do not hash to its checkpoint's root")
    if len({(c, tuple(e)) for c, e in served.values()}) > 1:
        problems.append(f"the API hosts {sorted(served)} serve different logs")
    if not live:
        problems.append("no API host answers to serve the log")
    return problems


def one_line(**figures: object) -> str:
    return ", ".join(
        f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in figures.items()
    )
