"""The processes of the cluster's roles: what a started process is, its environment, and how
long the harness waits for one to be ready."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from devstack.testing.cluster.namespaces import NetnsError

START_TIMEOUT_S = 90.0  # a role or service on a loaded two-core machine


@dataclass
class Proc:
    label: str
    popen: subprocess.Popen[bytes]
    log: Path
    started: float = field(default_factory=time.monotonic)

    @property
    def running(self) -> bool:
        return self.popen.poll() is None


def clean_env() -> dict[str, str]:
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
