"""The dashboard's snapshot as Prometheus metric families (`tilejudge_*`), for `/metrics`.

Every caller gets counts and queue depths; only an authorised one (`with_ids`) gets the
families labelled by contest or rejudge run, since their ids name contests not yet open, and
those labelled by a database or Redis node's address, which maps the private network; the
others get the same families summed, or the largest value, without labels."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector as PrometheusCollector


def exposition(snapshot: Callable[[], dict[str, Any]], *, with_ids: bool = False) -> bytes:
    """The text exposition of the snapshot `snapshot()` returns at this scrape."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotMetrics(snapshot, with_ids=with_ids))
    return generate_latest(registry)


class SnapshotMetrics(PrometheusCollector):
    """Translates the cached snapshot into `tilejudge_*` metric families at each scrape."""

    def __init__(self, snapshot: Callable[[], dict[str, Any]], *, with_ids: bool = False) -> None:
        self._snapshot = snapshot
        self._with_ids = with_ids

    def collect(self) -> Iterator[Metric]:
        snap = self._snapshot()
        yield from _queue_metrics(snap["queues"])
        totals = snap["totals"]
        yield CounterMetricFamily("tilejudge_uploads", "Uploads accepted.", totals["uploads"])
        yield CounterMetricFamily("tilejudge_judged", "Submissions judged.", totals["judged"])
        failures = CounterMetricFamily(
            "tilejudge_failures", "Submissions failed for good, by reason.", labels=["reason"]
        )
        for row in snap["failures"]["by_reason"]:
            failures.add_metric([row["reason"]], row["count"])
        yield failures
        yield _gauge("tilejudge_backlog", "Submissions accepted and not judged yet.",
                     totals["backlog"])  # fmt: skip
        histogram = snap["latency_histogram"]
        yield HistogramMetricFamily(
            "tilejudge_upload_to_result_seconds",
            "Seconds from an upload's receipt to its result.",
            buckets=[(str(bound), count) for bound, count in histogram["buckets"]],
            sum_value=histogram["sum_s"],
        )
        yield from _worker_metrics(snap["workers"])
        if self._with_ids:
            yield from _rejudge_metrics(snap["rejudges"])
            yield _contest_metrics(snap["contests"])
        else:
            yield from _rejudge_sums(snap["rejudges"])
        yield from _service_metrics(snap["services"], with_ids=self._with_ids)
        level = {"green": 0, "amber": 1, "red": 2}[snap["status"]["colour"]]
        yield _gauge("tilejudge_status", "0 keeping up, 1 backlog growing, 2 failing.", level)


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)


def _queue_metrics(queues: dict[str, Any]) -> Iterator[Metric]:
    up = queues["status"] == "ok"
    yield _gauge("tilejudge_broker_up", "1 if the broker's Redis answered.", 1 if up else 0)
    if not up:
        return
    depth = GaugeMetricFamily(
        "tilejudge_queue_depth", "Messages waiting in a queue, all priorities.", labels=["queue"]
    )
    for name in ("live", "bulk"):
        depth.add_metric([name], queues[name]["depth"])
    yield depth
    yield _gauge("tilejudge_queue_unacked", "Messages delivered, not acknowledged yet.",
                 queues["unacked"])  # fmt: skip


def _worker_metrics(workers: dict[str, Any]) -> Iterator[Metric]:
    if workers["online"] is None:
        return
    yield _gauge("tilejudge_workers_online", "Celery workers heard from recently.",
                 workers["online"])  # fmt: skip
    yield _gauge("tilejudge_worker_slots", "Pool processes of the online workers.",
                 workers["slots"])  # fmt: skip
    yield _gauge("tilejudge_worker_active_tasks", "Tasks running on the online workers.",
                 workers["active"])  # fmt: skip


def _rejudge_metrics(runs: list[dict[str, Any]]) -> Iterator[Metric]:
    total = GaugeMetricFamily(
        "tilejudge_rejudge_total", "Submissions in an open rejudge run.", labels=["run", "contest"]
    )
    done = GaugeMetricFamily(
        "tilejudge_rejudge_done", "Submissions re-judged so far.", labels=["run", "contest"]
    )
    for run in runs:
        if run["open"]:
            total.add_metric([run["id"], run["contest"]], run["total"])
            done.add_metric([run["id"], run["contest"]], run["done"])
    yield total
    yield done


def _rejudge_sums(runs: list[dict[str, Any]]) -> Iterator[Metric]:
    """The open runs' counts added up, for a caller who may not see run or contest ids."""
    open_runs = [run for run in runs if run["open"]]
    yield _gauge("tilejudge_rejudge_total", "Submissions in the open rejudge runs.",
                 sum(run["total"] for run in open_runs))  # fmt: skip
    yield _gauge("tilejudge_rejudge_done", "Submissions re-judged so far in the open runs.",
                 sum(run["done"] for run in open_runs))  # fmt: skip


def _contest_metrics(contests: list[dict[str, Any]]) -> Metric:
    family = GaugeMetricFamily(
        "tilejudge_contest_submissions", "Submissions by contest and state.",
        labels=["contest", "state"],
    )  # fmt: skip
    for contest in contests:
        for state, count in contest["counts"].items():
            family.add_metric([contest["id"], state], count)
    return family


def _service_metrics(services: dict[str, Any], *, with_ids: bool) -> Iterator[Metric]:
    """The primaries reached, the replicas' lag, the failovers this process has seen."""
    database, redis_status = services["database"], services["redis"]
    if database is not None:
        yield _gauge("tilejudge_database_primary_up",
                     "1 if the database reached answered and takes writes.",
                     1 if database["primary"] or database["dialect"] == "sqlite" else 0)  # fmt: skip
        if database["replicated"]:
            yield from _primary("database", database["primary"], with_ids=with_ids)
            standbys = database["standbys"]
            yield _gauge("tilejudge_database_replicas", "Standbys streaming from the primary.",
                         len(standbys))  # fmt: skip
            yield _gauge("tilejudge_database_sync_replicas",
                         "Standbys a commit waits for (sync or quorum).",
                         database["sync_standbys"])  # fmt: skip
            yield from _lag("database", standbys, "lag_seconds", "name", with_ids=with_ids)
            yield from _lag("database", standbys, "lag_bytes", "name", with_ids=with_ids)
    if redis_status is not None:
        yield _gauge("tilejudge_redis_primary_up", "1 if the Redis reached answers as primary.",
                     1 if redis_status["primary"] else 0)  # fmt: skip
        yield from _primary("redis", redis_status["primary"], with_ids=with_ids)
        replicas = redis_status["replicas"]
        yield _gauge("tilejudge_redis_replicas", "Replicas connected to the primary.",
                     len(replicas))  # fmt: skip
        yield from _lag("redis", replicas, "lag_bytes", "address", with_ids=with_ids)
        yield from _lag("redis", replicas, "lag_seconds", "address", with_ids=with_ids)
        sentinels = redis_status["sentinels"]
        if sentinels is not None:
            yield _gauge("tilejudge_redis_sentinels_answering",
                         "Sentinels of REDIS_URL that answered.", sentinels["answered"])  # fmt: skip
    seen = CounterMetricFamily(
        "tilejudge_failovers_seen",
        "Changes of primary this process has seen, by service.",
        labels=["service"],
    )
    for service, count in services["failovers_seen"].items():
        seen.add_metric([service], count)
    yield seen


def _primary(service: str, address: str | None, *, with_ids: bool) -> Iterator[Metric]:
    if with_ids and address:
        family = GaugeMetricFamily(
            f"tilejudge_{service}_primary_info", f"The {service} primary reached.",
            labels=["address"],
        )  # fmt: skip
        family.add_metric([address], 1)
        yield family


_LAG_DOCS = {
    "lag_seconds": ("seconds", "Seconds a replica is behind its primary"),
    "lag_bytes": ("bytes", "Bytes a replica is behind its primary"),
}


def _lag(
    service: str, replicas: list[dict[str, Any]], field: str, label: str, *, with_ids: bool
) -> Iterator[Metric]:
    """Each replica's lag, labelled by its name or address; the largest, without a label, for
    a caller who may not see addresses. A lag the primary does not show (no pg_monitor, or
    nothing to replay) is left out."""
    unit, doc = _LAG_DOCS[field]
    name = f"tilejudge_{service}_replica_lag_{unit}"
    known = [(str(r[label]), r[field]) for r in replicas if r[field] is not None]
    if not with_ids:
        if known:
            yield _gauge(name, f"{doc}, the largest.", max(lag for _, lag in known))
        return
    family = GaugeMetricFamily(name, f"{doc}.", labels=["replica"])
    # Standbys left unnamed all report PostgreSQL's default name: one series each all the same.
    repeats: Counter[str] = Counter()
    for replica, lag in known:
        repeats[replica] += 1
        family.add_metric(
            [replica if repeats[replica] == 1 else f"{replica} #{repeats[replica]}"], lag
        )
    yield family
