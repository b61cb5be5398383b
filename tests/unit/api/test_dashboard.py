"""The dashboard: sign-in and its cookie, /v1/stats and its cache, /metrics, and the status rules."""

from __future__ import annotations

import re
import threading
import time
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import inspect, text

from api.heartbeats import WorkerWatch
from api.services import ADMIN_COOKIE
from api.stats import StatsCollector, StatsSnapshotter, status_of
from core import clock
from devstack.testing.pipeline import ADMIN, ADMIN_TOKEN, Pipeline, drain
from infra.queues import queue_depths
from infra.sql.dashboard import minute_floor, reason_of

MOVES = b"0 0 2 0 cat\n"
STATIC = Path(__file__).resolve().parents[3] / "api" / "static"


def sign_in(pipe: Pipeline, token: str = ADMIN_TOKEN) -> Any:
    return pipe.client.post("/dashboard/login", data={"token": token}, follow_redirects=False)


class StoreClock:
    """Stands in for `core.clock.now`, the clock every stored time is written with and every
    snapshot is taken at: it reads `at`, then moves it on a microsecond (the stored times'
    precision), so times still differ and keep their order. A test puts `at` where it wants
    (inside one minute, or just before a minute ends) instead of taking its chances with the
    wall clock."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> str:
        self.at += timedelta(microseconds=1)
        return clock.format_time(self.at)


def pin_store_clock(monkeypatch: pytest.MonkeyPatch) -> StoreClock:
    """The store's clock, 1 s into the coming minute: up to a minute ahead of the wall clock,
    well inside the contest "open" (open for an hour either side of now)."""
    pinned = StoreClock(minute_floor(datetime.now(UTC)) + timedelta(minutes=1, seconds=1))
    monkeypatch.setattr(clock, "now", pinned)
    return pinned


@pytest.fixture
def store_clock(monkeypatch: pytest.MonkeyPatch) -> StoreClock:
    return pin_store_clock(monkeypatch)


# -- signing in and out ---------------------------------------------------------------------


def test_the_dashboard_without_a_cookie_shows_only_the_sign_in_form(pipe: Pipeline) -> None:
    page = pipe.client.get("/dashboard")
    assert page.status_code == 200
    assert 'action="/dashboard/login"' in page.text and 'name="token"' in page.text
    assert "dashboard.js" not in page.text


def test_the_admin_token_sets_an_httponly_strict_cookie_and_redirects(pipe: Pipeline) -> None:
    response = sign_in(pipe)
    assert response.status_code == 303
    assert response.headers["location"] == "/dashboard"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{ADMIN_COOKIE}=") and ADMIN_TOKEN not in cookie
    flags = {part.strip().lower() for part in cookie.split(";")}
    assert {"httponly", "samesite=strict", "path=/"} <= flags
    assert "secure" not in flags  # plain http: a Secure cookie would never come back


def test_a_wrong_token_gets_the_form_again_with_a_message_and_401(pipe: Pipeline) -> None:
    response = sign_in(pipe, "not-the-token")
    assert response.status_code == 401
    assert "not the admin token" in response.text
    assert 'name="token"' in response.text
    assert "set-cookie" not in response.headers
    assert "dashboard.js" not in pipe.client.get("/dashboard").text


def test_a_team_token_does_not_sign_in(pipe: Pipeline) -> None:
    team = pipe.add_team("ravens")
    assert sign_in(pipe, team.token).status_code == 401


def test_signed_in_the_page_and_its_assets_come_from_the_api_itself(pipe: Pipeline) -> None:
    sign_in(pipe)
    page = pipe.client.get("/dashboard")
    assert page.status_code == 200
    assert '<script src="/dashboard/static/dashboard.js"' in page.text
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "connect-src 'self'" in policy
    assert '<script src="/dashboard/static/dashboard_charts.js"' in page.text
    scripts = ("dashboard.js", "dashboard_charts.js")
    for name, kind in [*((n, "text/javascript") for n in scripts), ("dashboard.css", "text/css")]:
        asset = pipe.client.get(f"/dashboard/static/{name}")
        assert asset.status_code == 200
        assert asset.headers["content-type"].startswith(kind)
    assert pipe.client.get("/dashboard/static/../services.py").status_code == 404


def test_the_page_names_no_other_origin() -> None:
    for path in STATIC.iterdir():
        assert not re.search(r"https?://|//[a-z0-9.-]+\.[a-z]{2,}/", path.read_text()), path.name


def test_the_cookie_alone_authorises_v1_stats(pipe: Pipeline) -> None:
    assert pipe.client.get("/v1/stats").status_code == 401
    sign_in(pipe)
    assert pipe.client.get("/v1/stats").status_code == 200


def test_signing_out_clears_the_cookie(pipe: Pipeline) -> None:
    sign_in(pipe)
    response = pipe.client.post("/dashboard/logout", follow_redirects=False)
    assert response.status_code == 303
    assert re.search(rf"{ADMIN_COOKIE}=\"?\"?;.*Max-Age=0", response.headers["set-cookie"])
    assert pipe.client.get("/v1/stats").status_code == 401
    assert "dashboard.js" not in pipe.client.get("/dashboard").text


def test_v1_stats_is_for_the_admin_only(pipe: Pipeline) -> None:
    team = pipe.add_team("ravens")
    assert pipe.client.get("/v1/stats").status_code == 401
    assert pipe.client.get("/v1/stats", headers=team.headers).status_code == 403
    pipe.client.cookies.set(ADMIN_COOKIE, "guessed")
    assert pipe.client.get("/v1/stats").status_code == 401


# -- what /v1/stats holds -------------------------------------------------------------------


def test_v1_stats_has_the_shape_the_page_draws_from(
    pipe: Pipeline, store_clock: StoreClock
) -> None:
    team = pipe.add_team("ravens")
    pipe.accepted(team, MOVES)
    pipe.accepted(team, b"0 0 2 0 tab\n")
    drain(pipe.services)
    stats = pipe.client.get("/v1/stats", headers=ADMIN).json()

    assert clock.parse_time(stats["generated_at"])
    # No Redis in the in-process pipeline: queues and workers say so instead of failing.
    assert stats["queues"]["status"] == "unavailable" and stats["queues"]["total"] is None
    assert stats["workers"]["status"] == "unavailable" and stats["workers"]["online"] is None
    assert stats["totals"] == stats["totals"] | {"uploads": 2, "judged": 2, "backlog": 0}
    assert stats["uploads_per_minute"] == 2 and stats["judged_per_minute"] == 2
    assert stats["rejudged_per_minute"] == 0
    series = stats["series"]
    assert len(series["uploads"]) == len(series["judged"]) == len(series["queue_depth"]) == 60
    assert len(series["rejudged"]) == 60 and sum(series["rejudged"]) == 0
    assert series["uploads"][-1] == 2 and series["judged"][-1] == 2
    assert series["step_s"] == 60
    latency = stats["latency_ms"]
    assert latency["count"] == 2 and 0 <= latency["p50"] <= latency["p95"] <= latency["p99"]
    [contest] = stats["contests"]
    assert contest["id"] == "open" and contest["phase"] == "open"
    assert contest["counts"] == {"stored": 0, "queued": 0, "judging": 0, "judged": 2, "failed": 0}
    assert 3500 < contest["closes_in_s"] <= 3600
    assert stats["rejudges"] == []
    ids = [event["id"] for event in stats["events"]]
    assert ids == sorted(ids, reverse=True) and stats["events"][0]["type"] == "submission.judged"
    assert stats["status"]["colour"] == "green"
    assert stats["latency_histogram"]["count"] == 2


def test_uploads_just_before_a_minute_ends_are_charted_in_that_minute_and_still_counted(
    pipe: Pipeline, store_clock: StoreClock
) -> None:
    team = pipe.add_team("ravens")
    store_clock.at = minute_floor(store_clock.at) + timedelta(seconds=59.9)
    pipe.accepted(team, MOVES)
    pipe.accepted(team, b"0 0 2 0 tab\n")
    store_clock.at = minute_floor(store_clock.at) + timedelta(minutes=1, seconds=0.2)
    drain(pipe.services)
    stats = pipe.client.get("/v1/stats", headers=ADMIN).json()

    assert stats["series"]["uploads"][-2:] == [2, 0]
    assert stats["series"]["judged"][-2:] == [0, 2]
    assert stats["uploads_per_minute"] == 2 and stats["judged_per_minute"] == 2


def test_a_failed_submission_turns_the_status_red_and_names_its_reason(pipe: Pipeline) -> None:
    team = pipe.add_team("ravens")
    pipe.accepted(team, MOVES)
    for key in list(pipe.uploads()):
        del pipe.blobs.objects[key]  # the worker will not find the bytes: failed for good
    drain(pipe.services)
    stats = pipe.client.get("/v1/stats", headers=ADMIN).json()
    failures = stats["failures"]
    assert failures["total"] == 1 and failures["last_5_min"] == 1
    assert failures["by_reason"] == [{"reason": "upload_missing", "count": 1}]
    assert failures["recent"][0]["reason"] == "upload_missing"
    assert stats["status"]["colour"] == "red"
    assert stats["status"]["areas"]["failures"] == "red"
    assert "failed in the last 5 min" in stats["status"]["reasons"][0]


def test_open_rejudge_runs_show_progress_rate_and_eta(pipe: Pipeline) -> None:
    engine = pipe.store.engine
    with engine.begin() as conn:
        if not inspect(conn).has_table("rejudge_runs"):
            conn.execute(text(
                "CREATE TABLE rejudge_runs (id TEXT PRIMARY KEY, contest_id TEXT, state TEXT, "
                "total INTEGER, done INTEGER, created_at TEXT, updated_at TEXT)"
            ))  # fmt: skip
    moments = iter([datetime(2030, 1, 1, tzinfo=UTC) + timedelta(seconds=s) for s in (0, 10)])
    snapshotter = StatsSnapshotter(
        pipe.services.dashboard,
        pipe.services.rejudges,
        pipe.store,
        pipe.services.queue_depths,
        None,
        wall=lambda: next(moments),
    )
    start = clock.format_time(datetime(2029, 12, 31, 23, 59, 50, tzinfo=UTC))
    _insert_run(pipe, id="r1", state="running", total=100, done=20, created_at=start,
                updated_at="2030-01-01T00:00:00.000000Z")  # fmt: skip
    _insert_run(pipe, id="old", state="applied", total=5, done=5, created_at="2020-01-01T00:00:00Z")

    [first] = snapshotter.compute()["rejudges"]
    assert first["id"] == "r1" and first["open"] is True
    assert first["rate_per_s"] == 2.0 and first["eta_s"] == 40.0  # 20 done in its first 10 s
    with pipe.store.engine.begin() as conn:
        conn.execute(text("UPDATE rejudge_runs SET done = 70 WHERE id = 'r1'"))
    [second] = snapshotter.compute()["rejudges"]
    assert second["done"] == 70 and second["rate_per_s"] == 5.0  # 50 more in the 10 s seen
    assert second["eta_s"] == 6.0


def test_without_the_rejudge_table_there_are_no_runs(pipe: Pipeline) -> None:
    with pipe.store.engine.begin() as conn:
        conn.execute(text("DROP TABLE IF EXISTS rejudge_runs"))
    assert pipe.client.get("/v1/stats", headers=ADMIN).json()["rejudges"] == []


def _insert_run(pipe: Pipeline, **values: Any) -> None:
    """A row with the columns the dashboard reads; any other required column gets a filler."""
    values = {"contest_id": "open", "updated_at": values["created_at"]} | values
    with pipe.store.engine.begin() as conn:
        for column in inspect(conn).get_columns("rejudge_runs"):
            required = not column["nullable"] and column.get("default") is None
            if required and column["name"] not in values:
                filler = 0 if column["type"].python_type is int else "x"
                values[column["name"]] = filler
        names = ", ".join(values)
        conn.execute(
            text(
                f"INSERT INTO rejudge_runs ({names}) VALUES ({', '.join(':' + n for n in values)})"
            ),
            values,
        )


# -- the cache ------------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def counting(result: dict[str, Any] | Exception, delay: float = 0.0) -> Any:
    def compute() -> dict[str, Any]:
        compute.calls += 1  # type: ignore[attr-defined]
        time.sleep(delay)
        if isinstance(result, Exception):
            raise result
        return result

    compute.calls = 0  # type: ignore[attr-defined]
    return compute


def test_two_calls_within_a_second_compute_once() -> None:
    spy, tick = counting({"n": 1}), FakeClock()
    collector = StatsCollector(spy, monotonic=tick)
    assert collector.get() is collector.get()
    tick.now += 0.99
    collector.get()
    assert spy.calls == 1
    tick.now += 0.01
    collector.get()
    assert spy.calls == 2


def test_twenty_callers_at_once_share_one_computation() -> None:
    spy = counting({"n": 1}, delay=0.05)
    collector = StatsCollector(spy)
    threads = [threading.Thread(target=collector.get) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert spy.calls == 1


def test_a_failing_computation_is_retried_once_a_second_not_per_caller() -> None:
    spy, tick = counting(RuntimeError("SQL is down")), FakeClock()
    collector = StatsCollector(spy, monotonic=tick)
    for _ in range(3):
        with pytest.raises(RuntimeError):
            collector.get()
    assert spy.calls == 1


def test_two_requests_within_a_second_compute_once(
    pipe: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []
    real = StatsSnapshotter.compute

    def spy(self: StatsSnapshotter) -> dict[str, Any]:
        calls.append(1)
        return real(self)

    monkeypatch.setattr(StatsSnapshotter, "compute", spy)
    first = pipe.client.get("/v1/stats", headers=ADMIN).json()
    second = pipe.client.get("/v1/stats", headers=ADMIN).json()
    pipe.client.get("/metrics")
    assert len(calls) == 1
    assert first["generated_at"] == second["generated_at"]


# -- /metrics -------------------------------------------------------------------------------


def test_metrics_are_prometheus_exposition_under_the_tilejudge_prefix(pipe: Pipeline) -> None:
    team = pipe.add_team("ravens")
    pipe.accepted(team, MOVES)
    drain(pipe.services)
    response = pipe.client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=")
    families = {f.name: f for f in text_string_to_metric_families(response.text)}
    assert families and all(name.startswith("tilejudge_") for name in families)
    assert families["tilejudge_uploads"].type == "counter"
    assert families["tilejudge_uploads"].samples[0].value == 1
    assert families["tilejudge_judged"].samples[0].value == 1
    latency = families["tilejudge_upload_to_result_seconds"]
    assert latency.type == "histogram"
    count = next(s for s in latency.samples if s.name.endswith("_count"))
    assert count.value == 1
    assert families["tilejudge_broker_up"].samples[0].value == 0  # no Redis here
    for name in ("tilejudge_failures", "tilejudge_rejudge_done", "tilejudge_status"):
        assert name in families


# -- queue depth and the status rules -------------------------------------------------------


class FakeRedis:
    """Just the calls queue_depths makes, over lists and hashes kept in dicts."""

    def __init__(self, lists: dict[str, int], unacked: int = 0, down: bool = False) -> None:
        self.lists, self.unacked, self.down, self.commands = lists, unacked, down, 0

    def pipeline(self, transaction: bool = True) -> FakeRedis.Pipe:
        return FakeRedis.Pipe(self)

    class Pipe:
        def __init__(self, redis: FakeRedis) -> None:
            self.redis, self.replies = redis, []  # type: ignore[var-annotated]

        def llen(self, key: str) -> FakeRedis.Pipe:
            self.replies.append(self.redis.lists.get(key, 0))
            return self

        def hlen(self, key: str) -> FakeRedis.Pipe:
            self.replies.append(self.redis.unacked)
            return self

        def zcard(self, key: str) -> FakeRedis.Pipe:
            self.replies.append(self.redis.unacked)
            return self

        def exists(self, *keys: str) -> FakeRedis.Pipe:
            self.replies.append(sum(1 for key in keys if self.redis.lists.get(key)))
            return self

        def hkeys(self, key: str) -> FakeRedis.Pipe:  # no worker host of its own queue
            self.replies.append([])
            return self

        def execute(self) -> list[int]:
            import redis

            if self.redis.down:
                raise redis.ConnectionError("connection refused")
            self.redis.commands += len(self.replies)
            return self.replies


def test_queue_depth_adds_the_priority_lists_and_reads_the_unacked_set() -> None:
    fake = FakeRedis({"live": 3, "live\x06\x163": 2, "live\x06\x169": 1, "bulk": 7}, unacked=4)
    found = queue_depths(fake)  # type: ignore[arg-type]
    assert found["live"] == {"depth": 6, "by_priority": {"0": 3, "3": 2, "9": 1}}
    assert found["bulk"]["depth"] == 7 and found["total"] == 13
    assert found["unacked"] == 4 and found["unacked_index"] == 4


def test_queue_depth_costs_six_commands_while_no_priority_list_or_worker_host_exists() -> None:
    fake = FakeRedis({"live": 3})
    queue_depths(fake)  # type: ignore[arg-type]
    assert fake.commands == 6


def test_queue_depth_says_unavailable_when_redis_does_not_answer() -> None:
    found = queue_depths(FakeRedis({}, down=True))  # type: ignore[arg-type]
    assert found["status"] == "unavailable" and "connection refused" in found["detail"]


def test_a_queue_growing_for_a_minute_turns_amber_and_is_charted(pipe: Pipeline) -> None:
    fake = FakeRedis({"live": 0})
    moments = iter(datetime(2030, 1, 1, 12, 0, 30, tzinfo=UTC) + timedelta(seconds=s)
                   for s in (0, 60))  # fmt: skip
    snapshotter = StatsSnapshotter(
        pipe.services.dashboard,
        pipe.services.rejudges,
        pipe.store,
        partial(queue_depths, fake),  # type: ignore[arg-type]
        None,
        wall=lambda: next(moments),
    )
    assert snapshotter.compute()["status"]["colour"] == "green"
    fake.lists["live"] = 12
    later = snapshotter.compute()
    assert later["status"]["colour"] == "amber"
    assert later["status"]["reasons"] == ["backlog grew from 0 to 12 in the last minute"]
    assert later["status"]["areas"]["queue"] == "amber"
    assert later["series"]["queue_depth"][-2:] == [0, 12]


def test_status_rules() -> None:
    def colour(**kwargs: Any) -> str:
        given = {"failed_recently": 0, "waiting": 0, "waiting_then": 0, "workers_online": 2}
        return str(status_of(**(given | kwargs))["colour"])

    assert colour() == "green"
    assert colour(waiting=1, waiting_then=0) == "green"  # one message is noise
    assert colour(waiting=9, waiting_then=2) == "amber"
    assert colour(waiting=9, waiting_then=None) == "green"  # nothing to compare with yet
    assert colour(failed_recently=1) == "red"
    assert colour(waiting=3, waiting_then=3, workers_online=0) == "red"
    assert colour(waiting=0, workers_online=0) == "amber"  # idle, but nothing would judge
    assert colour(waiting=3, waiting_then=3, workers_online=None) == "green"  # unknown


def test_reasons_are_the_exception_class_not_the_message() -> None:
    assert reason_of("BlobNotFound: uploads/ab/cd") == "BlobNotFound"
    assert reason_of(None) == "unknown"


# -- worker heartbeats ----------------------------------------------------------------------


class FakeCelery:
    """Answers the one `inspect().stats()` the watch sends when it first hears a worker."""

    def __init__(self) -> None:
        self.control, self.asked = self, 0

    def inspect(self, destination: list[str], timeout: float) -> FakeCelery:
        return self

    def stats(self) -> dict[str, Any]:
        self.asked += 1
        return {"w1@host": {"pool": {"max-concurrency": 4}}}


def test_heartbeats_tell_which_workers_are_online_with_their_load() -> None:
    tick, celery = FakeClock(), FakeCelery()
    watch = WorkerWatch(celery, monotonic=tick)
    assert watch.snapshot()["status"] == "starting" and watch.snapshot()["online"] is None
    beat = {"type": "worker-heartbeat", "hostname": "w1@host", "freq": 2.0, "active": 3,
            "processed": 10}  # fmt: skip
    watch.on_event(beat)
    deadline = time.monotonic() + 5
    while watch.snapshot()["slots"] != 4 and time.monotonic() < deadline:
        time.sleep(0.01)  # the pool size is asked for in a thread of its own
    watch.on_event(beat)
    tick.now += 1.5
    found = watch.snapshot()
    assert (found["online"], found["slots"], found["active"]) == (1, 4, 3)
    assert found["list"][0]["last_heartbeat_s"] == 1.5
    assert celery.asked == 1  # once per worker, not per heartbeat
    tick.now += 5  # three heartbeat periods missed
    assert watch.snapshot()["online"] == 0
    assert watch.snapshot()["list"][0]["online"] is False
    watch.on_event(beat)
    watch.on_event({"type": "worker-offline", "hostname": "w1@host"})
    assert watch.snapshot()["online"] == 0


def snapshotter_of(pipe: Pipeline, client: Any, **options: Any) -> StatsSnapshotter:
    """The pipeline's dashboard snapshotter, over `client` as its Redis."""
    services = pipe.services
    depths = partial(queue_depths, client)
    return StatsSnapshotter(
        services.dashboard, services.rejudges, services.store, depths, None, **options
    )
