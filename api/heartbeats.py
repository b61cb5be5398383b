"""Celery workers as their heartbeat events show them, for the dashboard.

Workers publish a heartbeat every two seconds whether anyone listens or not (per-task events
stay off unless TILEJUDGE_TASK_EVENTS=1: the page needs none of them). One subscriber in the
API process hears them at no cost to the broker beyond the subscription itself: no `inspect()`
broadcast per refresh, no polling. The only broadcast is one `inspect().stats()` when a worker
is first seen, because a heartbeat does not carry the pool size.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog

log = structlog.get_logger("tilejudge.dashboard")

MISSED_BEATS_OFFLINE = 3  # a worker silent for three heartbeat periods is counted offline
FORGET_AFTER_S = 300.0  # an offline worker stays on the page this long, then disappears
WARM_UP_S = 5.0  # until then an empty list means "not heard yet", not "no worker online"
PROBE_RETRY_S = 10.0  # a worker busy re-forking its pool may miss the first question


@dataclass
class _Worker:
    hostname: str
    heard_at: float  # time.monotonic() when the last worker event arrived
    freq: float = 2.0
    active: int = 0
    processed: int = 0
    concurrency: int | None = None
    probed_at: float | None = None
    offline: bool = False


class WorkerWatch:
    """Subscribes to worker events in a daemon thread; `snapshot()` reads what it heard."""

    def __init__(self, celery_app: Any, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._app = celery_app
        self._now = monotonic
        self._workers: dict[str, _Worker] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._receiver: Any = None
        self._thread: threading.Thread | None = None
        self._started_at = monotonic()
        self._error: str | None = None

    def start(self) -> None:
        self._started_at = self._now()
        self._thread = threading.Thread(target=self._listen, name="worker-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._receiver is not None:
            self._receiver.should_stop = True
        if self._thread is not None:
            self._thread.join(timeout=3)

    def _listen(self) -> None:
        backoff = 1.0
        while not self._stopping.is_set():
            try:
                with self._app.connection_for_read() as connection:
                    self._receiver = self._app.events.Receiver(
                        connection, handlers={"*": self.on_event}
                    )
                    self._error = None
                    # wakeup=True asks every worker for a heartbeat now, so the page need not
                    # wait a full period after the API starts.
                    self._receiver.capture(limit=None, timeout=None, wakeup=True)
                    backoff = 1.0
            except Exception as exc:  # kombu raises many connection error types
                self._error = f"{type(exc).__name__}: {exc}"
                log.warning("dashboard.worker_watch_failed", error=self._error)
                self._stopping.wait(backoff)
                backoff = min(backoff * 2, 30.0)

    def on_event(self, event: dict[str, Any]) -> None:
        kind = str(event.get("type", ""))
        hostname = event.get("hostname")
        if not kind.startswith("worker-") or not isinstance(hostname, str):
            return
        probe = False
        with self._lock:
            worker = self._workers.get(hostname)
            if worker is None:
                worker = self._workers[hostname] = _Worker(hostname, self._now())
            worker.heard_at = self._now()
            worker.freq = float(event.get("freq") or worker.freq)
            worker.active = int(event.get("active") or 0)
            worker.processed = int(event.get("processed") or worker.processed)
            worker.offline = kind == "worker-offline"
            if worker.concurrency is None and not worker.offline:
                due = worker.probed_at is None or self._now() - worker.probed_at > PROBE_RETRY_S
                if due:
                    worker.probed_at = self._now()
                    probe = True
        if probe:
            threading.Thread(
                target=self._probe_concurrency, args=(hostname,), name="worker-probe", daemon=True
            ).start()

    def _probe_concurrency(self, hostname: str) -> None:
        try:
            inspect = self._app.control.inspect(destination=[hostname], timeout=2.0)
            replies = inspect.stats() or {}
            size = replies.get(hostname, {}).get("pool", {}).get("max-concurrency")
        except Exception as exc:  # a worker that does not answer keeps concurrency unknown
            log.info("dashboard.worker_probe_failed", worker=hostname, error=str(exc))
            return
        with self._lock:
            worker = self._workers.get(hostname)
            if worker is not None and isinstance(size, int):
                worker.concurrency = size

    def snapshot(self) -> dict[str, Any]:
        now = self._now()
        with self._lock:
            for name, worker in list(self._workers.items()):
                if now - worker.heard_at > FORGET_AFTER_S:
                    del self._workers[name]
            rows = [_row(worker, now) for worker in self._workers.values()]
        rows.sort(key=lambda row: row["hostname"])
        online = [row for row in rows if row["online"]]
        warming = not rows and now - self._started_at < WARM_UP_S
        status = "unavailable" if self._error else ("starting" if warming else "ok")
        return {
            "status": status,
            "detail": self._error,
            "online": None if status != "ok" else len(online),
            "slots": sum(row["concurrency"] or 0 for row in online),
            "slots_known": all(row["concurrency"] is not None for row in online),
            "active": sum(row["active"] for row in online),
            "list": rows,
        }


def _row(worker: _Worker, now: float) -> dict[str, Any]:
    age = now - worker.heard_at
    online = not worker.offline and age <= MISSED_BEATS_OFFLINE * max(worker.freq, 1.0)
    return {
        "hostname": worker.hostname,
        "online": online,
        "concurrency": worker.concurrency,
        "active": worker.active if online else 0,
        "processed": worker.processed,
        "last_heartbeat_s": round(age, 1),
    }
