"""Where an upload's time to result goes, for `benchmarks.local_stack_steady`: the stages its
events mark (`/v1/events`, as the run followed them), by percentile, for the uploads below the
near-limit size, with and without a near-limit upload being judged meanwhile."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from benchmarks.pipeline_bench import seconds
from devstack.load import percentile

# (label, from, to): an event type's last part, or "received" (the upload's received_at).
STAGES = (
    ("intake (received -> stored)", "received", "stored"),
    ("queue (stored -> judging)", "stored", "judging"),
    ("judging (judging -> judged)", "judging", "judged"),
)


def marks(
    events: Iterable[dict[str, Any]], docs: dict[str, dict[str, Any]]
) -> dict[str, dict[str, str]]:
    """Each submission's stage times: its first event of each type, its received_at, and its
    judged_at ("recorded": one for all the uploads a transaction recorded)."""
    found: dict[str, dict[str, str]] = {
        sid: {"received": str(doc["received_at"]), "recorded": str(doc.get("judged_at"))}
        for sid, doc in docs.items()
    }
    for event in events:
        stage = str(event["type"]).rpartition(".")[2]
        found.get(str(event.get("submission")), {}).setdefault(stage, str(event["ts"]))
    return found


def _ms(times: dict[str, str], start: str, end: str) -> float | None:
    if start not in times or end not in times:
        return None
    return 1000 * seconds(times[start], times[end])


def _line(label: str, values: list[float]) -> str:
    if not values:
        return f"      {label}: none"
    return (
        f"      {label}: p50 {percentile(values, 0.5):.0f}, p90 {percentile(values, 0.9):.0f}, "
        f"p99 {percentile(values, 0.99):.0f}, max {max(values):.0f} ms"
    )


def stage_lines(times: dict[str, dict[str, str]], light: list[str], near: list[str]) -> list[str]:
    """The stages of the `light` uploads, those judged while none of the `near` ones was being
    judged and the others apart; and how many uploads each recording transaction held."""
    spans = [
        (times[sid]["judging"], times[sid]["judged"])
        for sid in near
        if "judging" in times.get(sid, {}) and "judged" in times.get(sid, {})
    ]
    apart: dict[bool, list[str]] = {False: [], True: []}
    for sid in light:
        own = times.get(sid, {})
        if "judged" not in own:
            continue
        overlaps = any(s < own["judged"] and e > own["received"] for s, e in spans)
        apart[overlaps].append(sid)
    lines = []
    for overlapping, label in (
        (False, "no near-limit upload judged meanwhile"),
        (True, "one or more"),
    ):
        ids = apart[overlapping]
        lines.append(f"    {label} ({len(ids)} uploads):")
        for name, start, end in STAGES:
            values = [ms for sid in ids if (ms := _ms(times[sid], start, end)) is not None]
            lines.append(_line(name, values))
    together = Counter(times[sid]["recorded"] for sid in light if "judged" in times.get(sid, {}))
    sizes = Counter(together.values())
    shown = ", ".join(f"{n}: {count}" for n, count in sorted(sizes.items()))
    lines.append(f"    recording transactions, by how many of them each held: {shown}")
    return lines
