"""`tilejudge up`: run Redis, SeaweedFS, the SQL store, the API and the Celery workers in the
foreground, restart any of them that dies (on the same port), and stop every one of them cleanly
on SIGINT/SIGTERM or when one keeps dying.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Protocol

import httpx

from devstack import services as local_services
from devstack.services import LOOPBACK, Service, ServiceStartError
from infra.settings import Settings

READY_TIMEOUT_S = 60.0
# Celery's warm shutdown lets running tasks finish; a judging task takes seconds at most.
CHILD_STOP_TIMEOUT_S = 20.0
_POLL_S = 0.25
_PORT_KEYS = {"redis": "redis", "seaweedfs": "s3"}  # service name -> key in ports.json
KEEP_ALIVE_S = 75  # seconds an idle client connection is kept open by the API
# A part that dies is started again, unless it died this often within the window: then it
# is failing, not crashing, and `up` stops with its log rather than loop.
RESTART_LIMIT = 5
RESTART_WINDOW_S = 300.0


class StackError(RuntimeError):
    """The stack could not start or stopped on its own; the message says which part and why."""


class StopRequested(BaseException):
    """SIGINT or SIGTERM arrived. A BaseException, like KeyboardInterrupt, so no library's
    `except Exception` swallows it on the way up to the code that stops the children."""


class Supervised(Protocol):
    name: str
    process: subprocess.Popen[bytes]

    def log_tail(self, lines: int = 30) -> str: ...


@dataclass
class Child:
    """A process `up` spawned itself (API, worker), in a process group of its own."""

    name: str
    process: subprocess.Popen[bytes]
    log_path: Path
    argv: list[str]  # how to start it again
    env: dict[str, str]

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return "(no log written)"
        return "\n".join(text.splitlines()[-lines:])

    def terminate(self) -> None:
        # Only the group leader: Celery's parent stops its pool children itself after their
        # current task (warm shutdown); a SIGTERM to the whole group would cut tasks short.
        if self.process.poll() is None:
            self.process.terminate()

    def wait_or_kill(self, deadline: float, hurry: threading.Event) -> None:
        while self.process.poll() is None:
            if hurry.is_set() or time.monotonic() > deadline:
                print(f"{self.name} did not stop in time; killing it", flush=True)
                # The leader is not reaped yet, so its group id cannot belong to anyone else;
                # killing the group also takes any orphaned prefork children with it.
                _kill_group(self.process.pid)
                self.process.wait()
                return
            time.sleep(0.1)


def _kill_group(pgid: int) -> None:
    with suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


@dataclass
class Stack:
    """Everything `up` started, in start order, so that stopping goes in reverse."""

    logs: Path
    services: list[Service] = field(default_factory=list)
    children: list[Child] = field(default_factory=list)
    # How to start each local service again on the port its clients already know.
    restarters: dict[str, Callable[[int], Service]] = field(default_factory=dict)
    deaths: dict[str, list[float]] = field(default_factory=dict)  # name -> monotonic times

    def spawn(self, name: str, argv: list[str], env: dict[str, str]) -> Child:
        child = Child(name, self._popen(name, argv, env), self.logs / f"{name}.log", argv, env)
        self.children.append(child)
        return child

    def _popen(self, name: str, argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        with (self.logs / f"{name}.log").open("ab") as log:  # append: earlier logs survive
            log.write(f"--- {name} started at {_now()} ---\n".encode())
            log.flush()
            return subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                # Own process group: a Ctrl-C in the terminal reaches only `up`, which then
                # stops the children in order instead of all of them at once.
                process_group=0,
            )  # fmt: skip

    def add_service(self, service: Service, restart: Callable[[int], Service]) -> None:
        self.services.append(service)
        self.restarters[service.name] = restart

    def restart(self, dead: Supervised) -> None:
        """Start a dead part again, or raise StackError when it keeps dying or cannot start."""
        now = time.monotonic()
        recent = [t for t in self.deaths.get(dead.name, []) if now - t < RESTART_WINDOW_S]
        self.deaths[dead.name] = [*recent, now]
        if len(recent) >= RESTART_LIMIT:
            raise StackError(
                f"{_death_notice(dead)}\n{dead.name} died {len(recent) + 1} times within "
                f"{RESTART_WINDOW_S:.0f} s; stopping"
            )
        if isinstance(dead, Child):
            # Whatever the dead leader left in its group (uvicorn's or Celery's own children)
            # goes first, so the successor starts alone.
            _kill_group(dead.process.pid)
            dead.process = self._popen(dead.name, dead.argv, dead.env)
            return
        assert isinstance(dead, Service)
        dead.stop()  # reaps it and removes what it left behind (a stale socket)
        try:
            successor = self.restarters[dead.name](dead.port)
        except ServiceStartError as exc:
            raise StackError(f"{dead.name} could not be started again: {exc}") from exc
        self.services[self.services.index(dead)] = successor

    def first_dead(self) -> Supervised | None:
        parts: list[Supervised] = [*self.services, *self.children]
        for part in parts:
            if part.process.poll() is not None:
                return part
        return None

    def stop(self, hurry: threading.Event) -> None:
        for child in reversed(self.children):
            child.terminate()
        deadline = time.monotonic() + CHILD_STOP_TIMEOUT_S
        for child in reversed(self.children):
            child.wait_or_kill(deadline, hurry)
        for service in reversed(self.services):
            service.stop()


def run_stack(settings: Settings, demo: bool, workers: bool = True) -> int:
    """Run until SIGINT/SIGTERM (exit 0) or until a part fails or dies (exit 1)."""
    home = settings.home
    home.mkdir(parents=True, exist_ok=True)
    # Resolve the word list before starting anything, so a missing one costs no start-up.
    lexicon_path = _demo_lexicon() if demo else None
    signals = _SignalHandler()
    try:
        with _exclusive(home), _signals_to(signals):
            return _run_until_stopped(settings, lexicon_path, workers, signals)
    except StackError as exc:
        print(f"tilejudge up: {exc}", file=sys.stderr, flush=True)
        return 1


def _run_until_stopped(
    settings: Settings, lexicon_path: Path | None, workers: bool, signals: _SignalHandler
) -> int:
    stack = Stack(logs=settings.home / "logs")
    stack.logs.mkdir(exist_ok=True)
    try:
        return _run(settings, stack, lexicon_path, workers)
    except StopRequested:
        print("\nstopping…", flush=True)
        return 0
    except (StackError, ServiceStartError) as exc:
        print(f"tilejudge up: {exc}", file=sys.stderr, flush=True)
        return 1
    finally:
        signals.stopping = True
        stack.stop(signals.hurry)
        print("stopped", flush=True)


class _SignalHandler:
    """SIGINT/SIGTERM: the first one unwinds to the code that stops the stack; one arriving
    while it stops means "do not wait for the workers to finish their tasks"."""

    def __init__(self) -> None:
        self.stopping = False
        self.hurry = threading.Event()

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if self.stopping:
            self.hurry.set()
            return
        raise StopRequested(signal.Signals(signum).name)


def _demo_lexicon() -> Path:
    from infra import lexicon_files

    return lexicon_files.resolve(None)


def _run(settings: Settings, stack: Stack, lexicon_path: Path | None, workers: bool) -> int:
    home = settings.home
    ports = _load_ports(home)
    redis_url = settings.redis_url or _start_redis(stack, home, ports.get("redis"))
    s3_endpoint = settings.s3_endpoint or _start_s3(stack, settings, ports.get("s3"))
    database_url = settings.resolved_database_url()
    _migrate(database_url)
    # Generated here, once, so the API and the workers never race to create the same file.
    admin_token = settings.admin_token_value()
    settings.receipt_key_value()
    api_port = _choose_api_port(settings.api_port, ports.get("api"))
    _save_ports(home, ports, stack.services, api_port)
    env = os.environ | {
        "REDIS_URL": redis_url,
        "TILEJUDGE_S3_ENDPOINT": s3_endpoint,
        "TILEJUDGE_DATABASE_URL": database_url,
        "TILEJUDGE_HOME": str(home),
        "TILEJUDGE_API_PORT": str(api_port),
    }
    _register_judge_lexicon(settings, s3_endpoint, database_url)
    api = stack.spawn("api", _api_argv(api_port, settings.api_workers), env)
    if workers:
        stack.spawn("worker", _worker_argv(settings.workers + settings.standby_workers), env)
    api_url = f"http://{LOOPBACK}:{api_port}"
    _wait_ready(api_url, stack, api)
    _print_banner(api_url, settings, stack)
    if lexicon_path is not None:
        from devstack.demo import DemoError, load_demo

        try:
            load_demo(api_url, admin_token, lexicon_path, home)
        except (DemoError, httpx.HTTPError) as exc:
            raise StackError(f"the demo could not be loaded: {exc}") from exc
    return _supervise(stack)


def _register_judge_lexicon(settings: Settings, s3_endpoint: str, database_url: str) -> None:
    """Register the judge's word list before the workers start, so their parent preloads it
    and the pool shares one copy from the first upload on (a list registered later is loaded
    by each child that needs it until the workers restart)."""
    from dataclasses import replace

    from core.registry import register_lexicon
    from infra import lexicon_files
    from infra.compose import make_blobs, make_store
    from judge import Lexicon

    try:
        path = lexicon_files.resolve(None)
    except lexicon_files.LexiconNotFound:
        return
    wired = replace(settings, s3_endpoint=s3_endpoint, database_url=database_url)
    store = make_store(wired)
    try:
        register_lexicon(
            store,
            make_blobs(wired),
            Lexicon.from_bytes(path.read_bytes()),
            name="words_alpha",
            source=str(path),
            by="tilejudge up",
        )
    finally:
        store.engine.dispose()


def _start_redis(stack: Stack, home: Path, saved_port: int | None) -> str:
    def start(port: int | None) -> Service:
        return local_services.start_redis(home / "redis", port=port)

    service = _on_saved_port("redis", saved_port, start)
    stack.add_service(service, start)
    return service.url


def _start_s3(stack: Stack, settings: Settings, saved_port: int | None) -> str:
    def start(port: int | None) -> Service:
        return local_services.start_seaweedfs(
            settings.home / "s3", bucket=settings.s3_bucket, s3_port=port
        )

    service = _on_saved_port("seaweedfs", saved_port, start)
    stack.add_service(service, start)
    return service.url


def _on_saved_port(
    name: str, saved_port: int | None, start: Callable[[int | None], Service]
) -> Service:
    """Start on last run's port, so URLs stay stable across restarts; else on a free one."""
    if saved_port is not None:
        try:
            return start(saved_port)
        except ServiceStartError as exc:
            print(f"{name}: port {saved_port} unavailable ({exc}); choosing another", flush=True)
    return start(None)


def _migrate(database_url: str) -> None:
    from infra.sql.engine import make_engine
    from infra.sql.migrate import upgrade

    engine = make_engine(database_url)
    try:
        upgrade(engine)
    finally:
        engine.dispose()


def _choose_api_port(wanted: int, saved: int | None) -> int:
    for candidate in (wanted, saved):
        if candidate and _port_is_free(candidate):
            return candidate
    port = local_services.free_port()
    if wanted:
        print(f"api: port {wanted} is taken; using port {port}", flush=True)
    return port


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # As uvicorn binds: a predecessor's TIME_WAIT is fine, a live listener is not.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


def _load_ports(home: Path) -> dict[str, int]:
    try:
        saved = json.loads((home / "ports.json").read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(saved, dict):
        return {}
    return {k: v for k, v in saved.items() if isinstance(v, int) and 0 < v < 65536}


def _save_ports(home: Path, saved: dict[str, int], services: list[Service], api_port: int) -> None:
    # Merged into what was saved: a service configured externally this time keeps its old
    # local port for the next run that starts it again.
    ports = saved | {_PORT_KEYS[s.name]: s.port for s in services} | {"api": api_port}
    partial = home / "ports.json.partial"
    partial.write_text(json.dumps(ports, indent=2) + "\n")
    partial.replace(home / "ports.json")


def _api_argv(port: int, processes: int = 1) -> list[str]:
    return [
        sys.executable, "-m", "uvicorn", "api.app:create_app", "--factory",
        "--host", LOOPBACK, "--port", str(port), "--workers", str(processes),
        # The access log would write every client's address (X-Forwarded-For from a local
        # proxy included) to logs/api.log; the privacy page promises no IP addresses are kept.
        "--no-access-log",
        # Longer than clients keep an idle connection (httpx: 5 s), so the client, not the
        # server, ends an idle one: with both at 5 s a client could send its next upload just
        # as the server closed the connection, and get a reset (seen in the spike benchmark).
        "--timeout-keep-alive", str(KEEP_ALIVE_S),
    ]  # fmt: skip


def _worker_argv(concurrency: int) -> list[str]:
    # TILEJUDGE_WORKERS judge in bulk; the standby ones wait for live uploads during a rejudge
    # (workers/bulk_slots.py) and otherwise judge live uploads like the others.
    return [
        sys.executable, "-m", "celery", "-A", "workers.celery_app:app", "worker",
        "-Q", "live,bulk", "-c", str(concurrency), "--pool", "prefork",
        "--loglevel", "INFO", "-n", "tilejudge@%h",
    ]  # fmt: skip


def _wait_ready(api_url: str, stack: Stack, api: Child) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    last = "no answer yet"
    with httpx.Client(timeout=httpx.Timeout(2.0)) as http:
        while time.monotonic() < deadline:
            dead = stack.first_dead()
            if dead is not None:
                raise StackError(_death_notice(dead))
            try:
                response = http.get(f"{api_url}/readyz")
                if response.status_code == 200:
                    return
                last = f"HTTP {response.status_code}: {response.text[:300]}"
            except httpx.HTTPError as exc:
                last = f"{type(exc).__name__}: {exc}"
            time.sleep(_POLL_S)
    raise StackError(
        f"the API did not become ready within {READY_TIMEOUT_S:.0f} s ({last}); "
        f"{api.log_path} ends with:\n{api.log_tail()}"
    )


def _death_notice(part: Supervised) -> str:
    return (
        f"{part.name} exited unexpectedly with code {part.process.returncode}; "
        f"its log ends with:\n{part.log_tail()}"
    )


def _print_banner(api_url: str, settings: Settings, stack: Stack) -> None:
    token_from = "$TILEJUDGE_ADMIN_TOKEN" if settings.admin_token else settings.home / "admin-token"
    lines = [
        f"tilejudge is up (home {settings.home})",
        f"  API        {api_url}",
        f"  docs       {api_url}/docs",
        f"  dashboard  {api_url}/dashboard",
        f"  admin token in {token_from}",
        f"  logs       {stack.logs}/ (api.log, worker.log)",
        *(f"  {s.name:<10} {s.url} (log {s.log_path})" for s in stack.services),
        "Press Ctrl-C to stop.",
    ]
    print("\n".join(lines), flush=True)


def _supervise(stack: Stack) -> int:
    """Restart whatever dies (StackError, ending `up`, once something keeps dying)."""
    while True:
        supervise_once(stack)
        time.sleep(_POLL_S * 2)


def supervise_once(stack: Stack) -> None:
    dead = stack.first_dead()
    if dead is None:
        return
    print(f"tilejudge up: {_death_notice(dead)}", file=sys.stderr, flush=True)
    stack.restart(dead)
    print(f"tilejudge up: {dead.name} started again at {_now()}", file=sys.stderr, flush=True)


@contextmanager
def _signals_to(handler: _SignalHandler) -> Iterator[None]:
    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextmanager
def _exclusive(home: Path) -> Iterator[None]:
    """One `up` per home: two would run two Redis servers on one append-only file."""
    with (home / "up.lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StackError(f"another `tilejudge up` is already running on {home}") from None
        yield


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
