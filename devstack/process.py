"""A local server process on loopback ports (`Service`) and the plumbing that starts one:
spawning it with its log, waiting until it is ready, and starting again on a lost port race."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from urllib.parse import urlsplit

from devstack.ports import LOOPBACK, port_is_free

# SIGTERM lets Redis flush its append-only file and weed close its volumes; a server still
# running after this long is taken as hung and killed.
STOP_TIMEOUT_S = 10.0
# An auto-chosen port can be taken by someone else between the probe and the server's bind;
# starting again on fresh ports is the only cure for that race.
START_ATTEMPTS = 3
# Readiness probes are cheap loopback calls; polling often keeps start-up short.
POLL_INTERVAL_S = 0.05


class ServiceStartError(RuntimeError):
    """A local service exited or did not become ready in time."""


class ExitedEarly(ServiceStartError):
    """The server exited during start-up; another process may have taken its port first."""


@dataclass
class Service:
    """A running server process started by this package; stop it (or use `with`) when done."""

    name: str
    url: str = field(repr=False)  # may carry the service's password
    process: subprocess.Popen[bytes]
    log_path: Path
    ports: tuple[int, ...]
    # Files the process may leave behind after it exits (stale Unix sockets).
    leftovers: tuple[Path, ...] = field(default=(), repr=False)

    @property
    def port(self) -> int:
        """The port clients use (the one in `url`)."""
        port = urlsplit(self.url).port
        assert port is not None  # every url built here names its port
        return port

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM, then SIGKILL after `timeout` s; returns only once the process has exited,
        because a successor on the same ports fails while this one still holds them."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for path in self.leftovers:
            path.unlink(missing_ok=True)

    def log_tail(self, lines: int = 30) -> str:
        return log_tail(self.log_path, lines)

    def __enter__(self) -> Service:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def log_tail(log_path: Path, lines: int = 30) -> str:
    """The last `lines` lines of a process's log, for error messages."""
    try:
        text = log_path.read_text(errors="replace")
    except FileNotFoundError:
        return "(no log written)"
    return "\n".join(text.splitlines()[-lines:])


def require_free(ports: Iterable[int]) -> None:
    """Raise ServiceStartError naming the first of `ports` a live listener holds."""
    for port in ports:
        if not port_is_free(port):
            raise ServiceStartError(f"port {port} on {LOOPBACK} is already in use")


def spawn(
    argv: list[str], log_path: Path, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    # Append, so the log of an earlier run on the same directory survives a restart.
    with log_path.open("ab") as log:
        return subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=cwd, env=env,
            # Own process group: a Ctrl-C in the terminal reaches only the code that started the
            # server, which stops it after the parts that use it.
            process_group=0,
        )  # fmt: skip


def wait_until(service: Service, is_ready: Callable[[], bool], deadline: float) -> None:
    """Poll `is_ready` until it holds; on exit or at `deadline` (monotonic), stop and raise."""
    while True:
        code = service.process.poll()
        if code is not None:
            service.stop()
            raise ExitedEarly(
                f"{service.name} exited with code {code} during start-up; "
                f"{service.log_path} ends with:\n{service.log_tail()}"
            )
        try:
            ready = is_ready()
        except BaseException:
            service.stop()  # never leave a half-started server behind
            raise
        if ready:
            return
        if time.monotonic() > deadline:
            service.stop()
            raise ServiceStartError(
                f"{service.name} was not ready in time; "
                f"{service.log_path} ends with:\n{service.log_tail()}"
            )
        time.sleep(POLL_INTERVAL_S)


def start_with_retries(launch: Callable[[], Service], ports_were_chosen: bool) -> Service:
    """Run `launch`; when it chose its own ports and the server exited early, try again."""
    for attempt in range(1, START_ATTEMPTS + 1):
        try:
            return launch()
        except ExitedEarly:
            if not ports_were_chosen or attempt == START_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def find_binary(name: str, directories: Iterable[str | Path], missing: str) -> str:
    """An executable `name` in the first of `directories` that has one, else on PATH; else
    RuntimeError with `missing` (how to install it)."""
    for directory in directories:
        candidate = Path(directory) / name
        if os.access(candidate, os.X_OK):
            return str(candidate)
    on_path = shutil.which(name)
    if on_path:
        return on_path
    raise RuntimeError(missing)
