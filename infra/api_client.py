"""The one client of the HTTP API: every `tilejudge` command that talks to a server, the demo
loader and the load generator call through it, get its `ApiError` when a call fails, and send an
upload again by its one `Retry` policy.

Two transports carry its requests: httpx for commands (TLS, connection pooling, and a mock
transport for tests) and `devstack.http1` for the load generator's bursts, whose client runs on
the cores of the stack it measures and so must cost it as little as possible.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar
from urllib.parse import urlencode

import httpx

# Generous read deadline: an upload of the 2 MiB limit over a slow link still fits.
DEFAULT_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 5.0
# Answers that say "not now": the same call may succeed later.
RETRYABLE_STATUS = frozenset({429, 502, 503, 504})

T = TypeVar("T")


class TransportError(Exception):
    """A request that got no complete answer; `name` says how, as httpx names it (ConnectError,
    ReadError, ReadTimeout, RemoteProtocolError), whichever transport carried it."""

    def __init__(self, name: str, detail: str) -> None:
        super().__init__(f"{name}: {detail}")
        self.name = name
        self.detail = detail


class ApiError(Exception):
    """A call that failed: no answer at all, or one with an error status. The message is one
    line for the user; `outcome` is the status as text or the transport error's name."""

    def __init__(
        self,
        message: str,
        *,
        outcome: str,
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.outcome = outcome
        self.status = status
        self.retryable = retryable  # no answer, or one that says to try again later
        self.retry_after = retry_after


@dataclass(frozen=True)
class Answer:
    status: int
    reason: str
    headers: Mapping[str, str]  # looked up by lower-case name
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self) -> dict[str, Any]:
        """The body as a JSON object; ApiError if it is something else."""
        try:
            body = json.loads(self.body)
        except ValueError:
            raise ApiError(
                f"HTTP {self.status}: the answer is not JSON", outcome=str(self.status)
            ) from None
        if not isinstance(body, dict):
            raise ApiError(f"HTTP {self.status}: expected a JSON object", outcome=str(self.status))
        return body


def describe(answer: Answer) -> str:
    """The server's `{"error", "detail"}` as one line, or its raw text if it sent no JSON."""
    try:
        body = json.loads(answer.body)
    except ValueError:
        body = None
    if isinstance(body, dict) and "error" in body:
        text = f"{body['error']}: {body.get('detail', '')}".rstrip(": ")
    else:
        text = answer.text.strip()[:300] or answer.reason
    retry_after = answer.headers.get("retry-after")
    suffix = f" (retry after {retry_after} s)" if retry_after else ""
    return f"HTTP {answer.status} {text}{suffix}"


class Transport(Protocol):
    """Sends one request and returns the answer whatever its status; TransportError if none."""

    @property
    def url(self) -> str: ...

    def send(
        self,
        method: str,
        target: str,
        body: bytes,
        headers: Mapping[str, str],
        timeout: float | None,
    ) -> Answer: ...

    def close(self) -> None: ...


class HttpxTransport:
    """Requests through an httpx session (its pool, its TLS, its default timeout)."""

    def __init__(self, session: httpx.Client) -> None:
        self.session = session

    @property
    def url(self) -> str:
        return str(self.session.base_url).rstrip("/")

    def send(
        self,
        method: str,
        target: str,
        body: bytes,
        headers: Mapping[str, str],
        timeout: float | None,
    ) -> Answer:
        limit = (
            httpx.USE_CLIENT_DEFAULT
            if timeout is None
            else httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT_S))
        )
        try:
            response = self.session.request(
                method, target, content=body or None, headers=headers, timeout=limit
            )
        except httpx.HTTPError as exc:
            name = type(exc).__name__
            raise TransportError(name, str(exc) or name) from exc
        return Answer(
            response.status_code, response.reason_phrase, response.headers, response.content
        )

    def close(self) -> None:
        self.session.close()


class Client:
    """Calls to the API as one caller: `token` is sent with every call that names none."""

    def __init__(
        self, transport: Transport, token: str | None = None, timeout: float | None = None
    ) -> None:
        self.transport = transport
        self.token = token
        self.timeout = timeout  # None: the transport's own

    @property
    def url(self) -> str:
        return self.transport.url

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.transport.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        content: bytes | None = None,
        content_type: str = "text/plain",
        params: Mapping[str, str | int] | None = None,
        token: str | None = None,
        timeout: float | None = None,
        accept: Collection[int] = (),
    ) -> Answer:
        """The answer to one call; ApiError if there is none or its status is an error that is
        not in `accept`."""
        headers = {}
        if token or self.token:
            headers["Authorization"] = f"Bearer {token or self.token}"
        if json_body is not None:
            content, content_type = json.dumps(json_body).encode(), "application/json"
        if content is not None:
            headers["Content-Type"] = content_type
        target = f"{path}?{urlencode(params)}" if params else path
        try:
            answer = self.transport.send(
                method, target, content or b"", headers, timeout or self.timeout
            )
        except TransportError as exc:
            raise ApiError(
                f"cannot reach {self.url}: {exc.detail}", outcome=exc.name, retryable=True
            ) from exc
        if answer.status >= 400 and answer.status not in accept:
            raise ApiError(
                describe(answer),
                outcome=str(answer.status),
                status=answer.status,
                retryable=answer.status in RETRYABLE_STATUS,
                retry_after=retry_seconds(answer.headers.get("retry-after")),
            )
        return answer

    def call(self, method: str, path: str, **options: Any) -> dict[str, Any]:
        """`request`, for a call whose answer is a JSON object."""
        return self.request(method, path, **options).json()

    def pages(
        self, path: str, key: str, params: Mapping[str, str | int] | None = None
    ) -> Iterator[list[dict[str, Any]]]:
        """The items under `key` of each page of a paged listing, fetched as they are read:
        each page's `next` goes back as `after` until it is null."""
        after: str | None = None
        while True:
            query = {**(params or {}), **({"after": after} if after else {})}
            body = self.call("GET", path, params=query)
            items = body.get(key)
            if not isinstance(items, list):
                raise ApiError(f"the answer to GET {path} has no list {key!r}", outcome="200")
            yield items
            following = body.get("next")
            if not following:
                return
            if following == after:  # a server that repeats its cursor would be followed forever
                raise ApiError(f"GET {path} gave the same page cursor twice", outcome="200")
            after = str(following)

    def submit(
        self, contest: str, data: bytes, *, token: str | None = None, timeout: float | None = None
    ) -> Answer:
        """One upload of a submission's bytes as the team whose token is given."""
        return self.request(
            "POST",
            f"/v1/contests/{contest}/submissions",
            content=data,
            token=token,
            timeout=timeout,
        )


@dataclass(frozen=True)
class Retry:
    """When a failed call is made again, and the pause before it: after no answer or a 429,
    502, 503 or 504, doubling from `first_pause`, or as long as Retry-After says, never longer
    than `longest_pause`. Only for calls the server answers the same way twice: the same bytes
    from the same team are one submission, even past the deadline when the first copy came in
    time, so sending an upload again never makes a second one."""

    attempts: int = 5
    first_pause: float = 0.5
    longest_pause: float = 10.0
    follow_retry_after: bool = True
    sleep: Callable[[float], None] = field(default=time.sleep)
    clock: Callable[[], float] = field(default=time.monotonic)

    def pause(self, attempt: int, error: ApiError) -> float:
        """Seconds to wait after failed attempt number `attempt` (1 for the first)."""
        if self.follow_retry_after and error.retry_after is not None:
            return min(error.retry_after, self.longest_pause)
        return min(self.first_pause * 2.0 ** (attempt - 1), self.longest_pause)

    def run(
        self,
        call: Callable[[], T],
        *,
        deadline: float | None = None,
        announce: Callable[[ApiError, float, int], None] | None = None,
    ) -> T:
        """`call`'s result, calling again while attempts last and the pause ends before
        `deadline` (on `clock`); `announce(error, pause, next_attempt)` before each pause."""
        attempt = 1
        while True:
            try:
                return call()
            except ApiError as exc:
                if not exc.retryable or attempt >= self.attempts:
                    raise
                pause = self.pause(attempt, exc)
                if deadline is not None and self.clock() + pause >= deadline:
                    raise
                attempt += 1
                if announce is not None:
                    announce(exc, pause, attempt)
                self.sleep(pause)


def connect(
    url: str,
    token: str | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    transport: httpx.BaseTransport | None = None,
) -> Client:
    """A client over a new httpx session to `url`; `transport` replaces the network in tests."""
    limit = httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT_S))
    session = httpx.Client(base_url=url, timeout=limit, transport=transport)
    return Client(HttpxTransport(session), token)


def retry_seconds(header: str | None) -> float | None:
    return float(header) if header is not None and header.strip().isdigit() else None


@contextmanager
def step(what: str, error: type[Exception]) -> Iterator[None]:
    """Turns the API's refusal (or silence) into `error`, naming the step that was refused."""
    try:
        yield
    except ApiError as exc:
        raise error(f"{what}: {exc}") from exc
