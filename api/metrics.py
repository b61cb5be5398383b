"""The dashboard's snapshot as Prometheus metric families (`tilejudge_*`), for `/metrics`.

Every caller gets counts and queue depths; only an authorised one (`with_ids`) gets the
families labelled by contest or rejudge run, since their ids name contests not yet open."""

from __future__ import annotations

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
