"""The cluster's hosts and the roles started on them: the services host (SeaweedFS and the
third Sentinel), the database hosts (Patroni), the Redis hosts (Sentinel), API hosts and worker
hosts, with the settings and the deadlines every role runs with."""

from __future__ import annotations

import secrets
import sys
from contextlib import closing, suppress
from pathlib import Path
from typing import Any

import boto3
import httpx
import psycopg
import redis
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from core.tlog import generate_key
from devstack.seaweedfs import weed_binary
from devstack.testing.cluster.network import Host, Network
from devstack.testing.cluster.patroni import PatroniGroup
from devstack.testing.cluster.processes import START_TIMEOUT_S, Proc, clean_env, wait_for
from devstack.testing.cluster.sentinel import SentinelGroup
from infra.compose import make_celery
from infra.settings import Settings

TILEJUDGE = str(Path(sys.executable).parent / "tilejudge")
BUCKET = "tilejudge"
API_PORT = 8000
GRPC_OFFSET = 10_000  # weed's gRPC port is its HTTP port + 10000
WEED_COMPONENTS = ("master", "volume", "filer", "s3", "admin")

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


class ClusterRoles:
    """The hosts and their roles: started, waited for, healed (cluster.Cluster adds what a test
    asks of them)."""

    def __init__(self, network: Network) -> None:
        self.network = network
        self.client = network.add_host(*CLIENT)
        self.services = network.add_host("services", OCTETS["services"])
        address = self.services.address
        self.pg_password = secrets.token_urlsafe(18)
        self.redis_password = secrets.token_urlsafe(18)
        self.s3_key, self.s3_secret = f"tj{secrets.token_hex(8)}", secrets.token_urlsafe(24)
        self.admin_token = secrets.token_urlsafe(24)
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
        self.env = clean_env() | TIMINGS | {
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
        env = clean_env() | {
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

    # -- SQL --------------------------------------------------------------------------------

    def sql(self, query: str, *args: Any) -> list[tuple[Any, ...]]:
        with closing(self._postgres("tilejudge")) as conn:
            return list(conn.execute(query, args).fetchall())
