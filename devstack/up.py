"""`tilejudge up`: run Redis, SeaweedFS, the SQL store, the API and the Celery workers in the
foreground on stable ports, and hand them to the supervisor until SIGINT/SIGTERM or until one
keeps dying.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import NoReturn
from urllib.parse import urlsplit, urlunsplit

import httpx

from core.log_signing import LogSigner
from devstack.children import api_argv, child_env, register_judge_lexicon, worker_argv
from devstack.ports import LOOPBACK, free_port, port_is_free
from devstack.process import Service, ServiceStartError
from devstack.redis_server import redis_password, start_redis
from devstack.seaweedfs import S3Credentials, s3_credentials, start_seaweedfs
from devstack.stack import Child, Stack, StackError, death_notice, supervise
from infra.settings import ClientSettings, Settings

# /readyz answers 200 once the API reaches Redis, S3 and the SQL store; a first start (imports,
# one process per API worker) is slow on a loaded machine. Past this `up` stops with the API's log.
READY_TIMEOUT_S = 60.0
# /readyz is cheap; polling it often shortens `up`'s start-up.
READY_POLL_S = 0.25
_PORT_KEYS = {"redis": "redis", "seaweedfs": "s3"}  # service name -> key in ports.json
# The file in the home that holds what a client of each local service must present.
_SECRET_FILES = {"redis": "redis-password", "seaweedfs": "s3-credentials"}
# Where the running stack's API answers, for clients on this machine; only while `up` holds
# up.lock (a killed `up` cannot remove it).
API_URL_FILE = "api-url"


class StopRequested(BaseException):
    """SIGINT or SIGTERM arrived. A BaseException, like KeyboardInterrupt, so no library's
    `except Exception` swallows it on the way up to the code that stops the children."""


def make_private(home: Path) -> None:
    """The home holds the database, Redis's append-only file, the S3 volumes, the logs and the
    secrets: readable by the user alone, even where it existed already with a wider mode."""
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    home.chmod(0o700)


def run_stack(settings: Settings, demo: bool, workers: bool = True) -> int:
    """Run until SIGINT/SIGTERM (exit 0) or until a part fails or dies (exit 1)."""
    home = settings.home
    make_private(home)
    # Resolve the demo's word list before starting anything, so a missing one costs no start-up.
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
        _run(settings, stack, lexicon_path, workers)
    except StopRequested:
        print("\nstopping…", flush=True)
        return 0
    except (StackError, ServiceStartError) as exc:
        print(f"tilejudge up: {exc}", file=sys.stderr, flush=True)
        return 1
    finally:
        signals.stopping = True
        # First: clients stop finding a stack that is going away.
        (settings.home / API_URL_FILE).unlink(missing_ok=True)
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
    from devstack.demo import demo_lexicon

    return demo_lexicon(ClientSettings.from_env())


def _run(settings: Settings, stack: Stack, lexicon_path: Path | None, workers: bool) -> NoReturn:
    home = settings.home
    ports = _load_ports(home)
    redis_url = settings.redis_url or _start_redis(stack, home, ports.get("redis"))
    # A configured S3 is reached with the configured keys, the local one with its own pair.
    local_s3: S3Credentials | None = None
    if settings.s3_endpoint:
        s3_endpoint = settings.s3_endpoint
    else:
        local_s3 = s3_credentials(home / "s3-credentials")
        s3_endpoint = _start_s3(stack, settings, local_s3, ports.get("s3"))
        settings = replace(
            settings, s3_access_key=local_s3.access_key, s3_secret_key=local_s3.secret_key
        )
    database_url = settings.resolved_database_url()
    from infra.compose import migrate  # the clients' modules, in the one process that needs them

    migrate(database_url)
    # Generated here, once, so the API and the workers never race to create the same file.
    admin_token = settings.admin_token_value()
    settings.receipt_key_value()
    settings.log_key_value()  # the transparency logs' signing key (docs/transparency.md)
    api_port = _choose_api_port(settings.api_port, ports.get("api"))
    _save_ports(home, ports, stack.services, api_port)
    env = child_env(
        redis_url=redis_url,
        s3_endpoint=s3_endpoint,
        database_url=database_url,
        home=home,
        api_port=api_port,
        s3_keys=local_s3,
    )
    register_judge_lexicon(settings, s3_endpoint, database_url)
    api = stack.spawn("api", api_argv(api_port, settings.api_workers), env)
    if workers:
        stack.spawn("worker", worker_argv(settings.workers + settings.standby_workers), env)
    api_url = f"http://{LOOPBACK}:{api_port}"
    _wait_ready(api_url, stack, api)
    _write_api_url(home, api_url)
    _print_banner(api_url, settings, stack, demo=lexicon_path is not None)
    if lexicon_path is not None:
        from devstack.demo import DemoError, load_demo

        try:
            load_demo(api_url, admin_token, lexicon_path, home, wait=workers)
        except DemoError as exc:
            raise StackError(f"the demo could not be loaded: {exc}") from exc
    supervise(stack)


def _start_redis(stack: Stack, home: Path, saved_port: int | None) -> str:
    password = redis_password(home / "redis-password")

    def start(port: int | None) -> Service:
        return start_redis(home / "redis", port=port, password=password)

    service = _on_saved_port("redis", saved_port, start)
    stack.add_service(service, start)
    return service.url


def _start_s3(
    stack: Stack, settings: Settings, credentials: S3Credentials, saved_port: int | None
) -> str:
    def start(port: int | None) -> Service:
        return start_seaweedfs(
            settings.home / "s3", settings.s3_bucket, s3_port=port, credentials=credentials
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


def _choose_api_port(wanted: int, saved: int | None) -> int:
    # port_is_free binds as uvicorn does: a predecessor's TIME_WAIT is fine, a live listener
    # is not.
    for candidate in (wanted, saved):
        if candidate and port_is_free(candidate):
            return candidate
    port = free_port()
    if wanted:
        print(f"api: port {wanted} is taken; using port {port}", flush=True)
    return port


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


def _wait_ready(api_url: str, stack: Stack, api: Child) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    last = "no answer yet"
    with httpx.Client(timeout=httpx.Timeout(2.0)) as http:
        while time.monotonic() < deadline:
            dead = stack.first_dead()
            if dead is not None:
                raise StackError(death_notice(dead))
            try:
                response = http.get(f"{api_url}/readyz")
                if response.status_code == 200:
                    return
                last = f"HTTP {response.status_code}: {response.text[:300]}"
            except httpx.HTTPError as exc:
                last = f"{type(exc).__name__}: {exc}"
            time.sleep(READY_POLL_S)
    raise StackError(
        f"the API did not become ready within {READY_TIMEOUT_S:.0f} s ({last}); "
        f"{api.log_path} ends with:\n{api.log_tail()}"
    )


def _write_api_url(home: Path, api_url: str) -> None:
    """One line, replaced atomically: a client never reads half a URL."""
    partial = home / f"{API_URL_FILE}.partial"
    partial.write_text(api_url + "\n")
    os.replace(partial, home / API_URL_FILE)


def _demo_tokens(home: Path) -> Path:
    from devstack.demo import tokens_dir

    return tokens_dir(home)


def without_password(url: str) -> str:
    """`url` with no user name or password in it, fit to be shown."""
    parts = urlsplit(url)
    if parts.password is None and parts.username is None:
        return url
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))


def _verifier_key(settings: Settings) -> str:
    """The public half of the transparency logs' key, which auditors pin."""
    return LogSigner(settings.log_key_value()).verifier_key


def _print_banner(api_url: str, settings: Settings, stack: Stack, demo: bool) -> None:
    home = settings.home
    token_file = home / "admin-token"
    lines = [
        f"tilejudge is up (home {home})",
        f"  API        {api_url}",
        f"  docs       {api_url}/docs",
        f"  dashboard  {api_url}/dashboard",
        "  admin token "
        + ("from $TILEJUDGE_ADMIN_TOKEN" if settings.admin_token else f"in {token_file}"),
        *([f"  demo team tokens in {_demo_tokens(home)}/ (one file per team)"] if demo else []),
        f"  log key    {_verifier_key(settings)} (`tilejudge audit --key` it)",
        f"  logs       {stack.logs}/ (api.log, worker.log)",
        *(
            f"  {s.name:<10} {without_password(s.url)} "
            f"(credentials in {home / _SECRET_FILES[s.name]}, log {s.log_path})"
            for s in stack.services
        ),
        # TILEJUDGE_HOME alone: through it a client finds the admin token, the demo's team
        # tokens and, while this stack runs, its URL (api-url), which stays true if a restart
        # moves the API to another port where an exported URL would not.
        "In another shell, the tilejudge command finds this stack (URL, admin token) after:",
        f"  export TILEJUDGE_HOME={shlex.quote(str(home))}",
        "Press Ctrl-C to stop.",
    ]
    print("\n".join(lines), flush=True)


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
