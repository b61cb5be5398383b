"""Supervision for `tilejudge up`: the processes it started, restarting whichever dies (on the
same port), giving up on one that keeps dying, and stopping them all in reverse start order.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import NoReturn, Protocol

from devstack.process import Service, ServiceStartError, log_tail

# Celery's warm shutdown lets running tasks finish; a judging task takes seconds at most.
CHILD_STOP_TIMEOUT_S = 20.0
# A part that dies is started again, unless it died this often within the window: then it
# is failing, not crashing, and `up` stops with its log rather than loop.
RESTART_LIMIT = 5
RESTART_WINDOW_S = 300.0
# A check is one poll() per part, so twice a second costs nothing and notices a death quickly.
SUPERVISE_INTERVAL_S = 0.5
# How often a stopping child is checked for having exited before its deadline.
STOP_POLL_S = 0.1


class StackError(RuntimeError):
    """The stack could not start or stopped on its own; the message says which part and why."""


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
        return log_tail(self.log_path, lines)

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
            time.sleep(STOP_POLL_S)


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
                f"{death_notice(dead)}\n{dead.name} died {len(recent) + 1} times within "
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


def supervise(stack: Stack) -> NoReturn:
    """Restart whatever dies, forever; StackError ends it once something keeps dying."""
    while True:
        supervise_once(stack)
        time.sleep(SUPERVISE_INTERVAL_S)


def supervise_once(stack: Stack) -> None:
    dead = stack.first_dead()
    if dead is None:
        return
    print(f"tilejudge up: {death_notice(dead)}", file=sys.stderr, flush=True)
    stack.restart(dead)
    print(f"tilejudge up: {dead.name} started again at {_now()}", file=sys.stderr, flush=True)


def death_notice(part: Supervised) -> str:
    return (
        f"{part.name} exited unexpectedly with code {part.process.returncode}; "
        f"its log ends with:\n{part.log_tail()}"
    )


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
