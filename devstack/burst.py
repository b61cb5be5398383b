"""The burst: every upload of a corpus sent by `plan.concurrency` client threads, each with its
own keep-alive connection, and every attempt recorded (when, how long, what came back)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

from devstack import http1
from devstack.plan import REQUEST_TIMEOUT_S, Corpus, Plan
from infra.api_client import Answer, ApiError, Client, Retry


@dataclass(frozen=True)
class Attempt:
    upload: int
    started: float  # time.monotonic() when the request was sent
    latency: float  # seconds until the answer (or the transport error)
    outcome: str  # the HTTP status as text, or the transport error's class name


@dataclass
class Upload:
    index: int
    team: int
    outcome: str = "not sent"
    submission: str | None = None
    received_at: str | None = None
    duplicate: bool = False

    @property
    def acknowledged(self) -> bool:
        return self.outcome == "202"


@dataclass
class Burst:
    uploads: list[Upload]
    attempts: list[Attempt] = field(default_factory=list)
    started_wall: datetime = field(default_factory=lambda: datetime.now(UTC))
    started: float = field(default_factory=time.monotonic)
    elapsed: float = 0.0

    @property
    def acknowledged(self) -> list[Upload]:
        return [u for u in self.uploads if u.acknowledged]

    def accept_latencies(self) -> list[float]:
        return [a.latency for a in self.attempts if a.outcome == "202"]

    def outcomes(self) -> Counter[str]:
        return Counter(a.outcome for a in self.attempts)


def run_burst(plan: Plan, tokens: list[str], corpus: Corpus, deadline: float) -> Burst:
    """Upload the corpus with `plan.concurrency` clients; stops at `deadline` (monotonic)."""
    return send_all(plan, tokens, corpus.data, deadline)


def send_all(plan: Plan, tokens: list[str], data: list[bytes], deadline: float) -> Burst:
    """Upload each of `data` (upload n as team n % T) with `plan.concurrency` client threads,
    each on its own keep-alive connection; stops at `deadline` (monotonic)."""
    burst = Burst([Upload(n, n % len(tokens)) for n in range(len(data))])
    sender = _Sender(plan, tokens, data, burst, deadline)
    clients = [
        threading.Thread(target=sender.client, name=f"load-client-{n}", daemon=True)
        for n in range(min(plan.concurrency, len(data)))
    ]
    for thread in clients:
        thread.start()
    for thread in clients:
        thread.join()
    burst.elapsed = time.monotonic() - burst.started
    if sender.failure is not None:
        raise sender.failure
    return burst


class _Sender:
    """What the client threads share: the uploads still to send, and where attempts go."""

    def __init__(
        self, plan: Plan, tokens: list[str], data: list[bytes], burst: Burst, deadline: float
    ) -> None:
        self.plan, self.tokens, self.data = plan, tokens, data
        self.burst, self.deadline = burst, deadline
        self.failure: Exception | None = None  # a bug in a client thread, raised after it
        self._todo = iter(burst.uploads)
        self._lock = threading.Lock()

    def next_upload(self) -> Upload | None:
        with self._lock:
            return next(self._todo, None)

    def client(self) -> None:
        """One client: its own keep-alive connection, the next upload until none is left."""
        retry = self.plan.retry
        try:
            with Client(http1.Connection(self.plan.url)) as api:
                while (upload := self.next_upload()) is not None:
                    if self.plan.rate:
                        due = self.burst.started + upload.index / self.plan.rate
                        time.sleep(max(0.0, due - time.monotonic()))
                    if time.monotonic() >= self.deadline:
                        return
                    self.send(api, retry, upload)
        except Exception as exc:
            self.failure = exc

    def send(self, api: Client, retry: Retry, upload: Upload) -> None:
        """Upload, and again by the plan's retry policy while attempts and the deadline last."""
        token, data = self.tokens[upload.team], self.data[upload.index]

        def attempt() -> Answer:
            began = time.monotonic()
            try:
                timeout = max(1.0, min(REQUEST_TIMEOUT_S, self.deadline - began))
                answer = api.submit(self.plan.contest, data, token=token, timeout=timeout)
                upload.outcome = str(answer.status)
                return answer
            except ApiError as exc:
                upload.outcome = exc.outcome
                raise
            finally:
                latency = time.monotonic() - began
                # list.append is atomic: the threads need no lock to record.
                self.burst.attempts.append(Attempt(upload.index, began, latency, upload.outcome))

        try:
            answer = retry.run(attempt, deadline=self.deadline)
        except ApiError:
            return
        if answer.status == 202:
            receipt = answer.json()
            upload.submission, upload.received_at = str(receipt["id"]), str(receipt["received_at"])
            upload.duplicate = answer.headers.get("x-tilejudge-duplicate") == "true"
