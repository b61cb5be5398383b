"""Uploads sent to the cluster's API hosts by client threads, each sent again to the next host
on a failure, with every attempt kept for the checks."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from devstack import http1
from devstack.testing.cluster.corpora import Corpus
from devstack.testing.cluster.namespaces import NetnsError
from infra.api_client import Answer, ApiError, Client, Retry

# How a client sends an upload again after no answer or a 502, 503 or 504: to the next API host
# in turn, at once and then with short pauses, for about half a minute at most.
FAILOVER = Retry(attempts=24, first_pause=0.1, longest_pause=2.0, follow_retry_after=False)


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
