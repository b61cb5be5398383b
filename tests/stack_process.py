"""Runs `tilejudge up` as a real process for end-to-end tests and benchmarks, and stops it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import httpx

from devstack.ports import free_port


@dataclass
class RunningStack:
    url: str
    admin_token: str
    home: Path
    process: subprocess.Popen[bytes]

    @property
    def admin(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.admin_token}"}

    @property
    def redis_url(self) -> str:
        ports = json.loads((self.home / "ports.json").read_text())
        return f"redis://127.0.0.1:{ports['redis']}/0"

    def log(self, name: str) -> str:
        path = self.home / "logs" / f"{name}.log"
        return path.read_text(errors="replace") if path.is_file() else ""


@contextmanager
def running_stack(
    home: Path,
    *,
    workers: int = 2,
    env: dict[str, str] | None = None,
    timeout: float = 120.0,
    demo: bool = False,
) -> Iterator[RunningStack]:
    """`tilejudge up` (with `demo`, `up --demo`) on a free port, ready. An empty
    TILEJUDGE_ADMIN_TOKEN in `env` leaves `up` to generate one into the home, as it does for
    a user."""
    port = free_port()
    child_env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TILEJUDGE_") and k not in ("REDIS_URL",)
    }
    child_env |= {
        "TILEJUDGE_HOME": str(home),
        "TILEJUDGE_API_PORT": str(port),
        "TILEJUDGE_WORKERS": str(workers),
        "TILEJUDGE_ADMIN_TOKEN": "e2e-admin-token",
        "TILEJUDGE_LEXICON": os.environ.get("TILEJUDGE_LEXICON", ""),
    }
    child_env |= env or {}
    home.mkdir(parents=True, exist_ok=True)
    out = open(home / "up.out", "wb")  # noqa: SIM115 (closed in finally)
    process = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "up", *(["--demo"] if demo else [])],
        env=child_env,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(url, process, home, timeout)
        admin_token = child_env["TILEJUDGE_ADMIN_TOKEN"] or (home / "admin-token").read_text()
        yield RunningStack(url, admin_token.strip(), home, process)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)
        out.close()


def _wait_ready(url: str, process: subprocess.Popen[bytes], home: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"tilejudge up exited {process.returncode}:\n{(home / 'up.out').read_text()[-4000:]}"
            )
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise RuntimeError(
        f"tilejudge up not ready in {timeout} s:\n{(home / 'up.out').read_text()[-4000:]}"
    )


def children_of(parent: int) -> list[int]:
    """The pids whose parent is `parent` (zombies included), read from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with suppress(OSError, IndexError, ValueError):
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == parent:
                    found.append(int(entry.name))
    return found
