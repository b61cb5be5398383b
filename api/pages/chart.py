"""Charts drawn on the server as inline SVG: no script in them and no style attribute (the
page's policy allows neither), colours by class from the page's stylesheet. Each chart has a
title and a description for assistive technology, and its data as a table beside it.

A game's page module decides what its chart shows (`api.pages.games`); these draw it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from api.pages.layout import e

WIDTH, HEIGHT = 640, 260
LEFT, RIGHT, TOP, BOTTOM = 56, 12, 12, 28  # the plot's margins, room for the axes' labels
SERIES_MOST = 10  # colours the stylesheet has (`.series-0` to `.series-9`)


@dataclass(frozen=True)
class Series:
    """One line: its name and its (seconds from the chart's start, value) steps, in order."""

    name: str
    steps: Sequence[tuple[float, float]]


def step_chart(
    chart_id: str,
    title: str,
    desc: str,
    series: Sequence[Series],
    span_s: float,
    axis: str,
    until: float,
) -> str:
    """Each series as a step line (a best score holds until it is beaten) on an axis of
    `span_s` seconds from zero (before its first step) on to `until`, with a legend and the
    data as a table."""
    shown = list(series)[:SERIES_MOST]
    top = max((value for s in shown for _, value in s.steps), default=0.0)
    top = top if top > 0 else 1.0
    span_s = max(span_s, 1.0)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(t: float) -> float:
        return LEFT + plot_w * min(max(t, 0.0), span_s) / span_s

    def y(value: float) -> float:
        return TOP + plot_h * (1 - value / top)

    lines = []
    for n, one in enumerate(shown):
        if not one.steps:
            continue
        first_t, first = one.steps[0]
        # Nothing until the first step: the line starts at zero from the chart's start.
        points = [f"{x(0):.1f},{y(0):.1f}", f"{x(first_t):.1f},{y(0):.1f}"]
        points.append(f"{x(first_t):.1f},{y(first):.1f}")
        for (_, before), (t, value) in zip(one.steps, one.steps[1:], strict=False):
            points.append(f"{x(t):.1f},{y(before):.1f}")
            points.append(f"{x(t):.1f},{y(value):.1f}")
        points.append(f"{x(max(until, one.steps[-1][0])):.1f},{y(one.steps[-1][1]):.1f}")
        lines.append(f'<polyline class="line series-{n}" points="{" ".join(points)}"/>')
    axes = (
        f'<line class="axis" x1="{LEFT}" y1="{TOP + plot_h}" x2="{LEFT + plot_w}" '
        f'y2="{TOP + plot_h}"/><line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" '
        f'y2="{TOP + plot_h}"/>'
        f'<text class="tick" x="{LEFT - 6}" y="{TOP + 10}" text-anchor="end">{top:,.0f}</text>'
        f'<text class="tick" x="{LEFT - 6}" y="{TOP + plot_h}" text-anchor="end">0</text>'
        f'<text class="tick" x="{LEFT}" y="{HEIGHT - 8}">start</text>'
        f'<text class="tick" x="{LEFT + plot_w}" y="{HEIGHT - 8}" text-anchor="end">'
        f"{e(axis)}</text>"
    )
    svg = _svg(chart_id, title, desc, axes + "".join(lines))
    rows = [
        (one.name, "; ".join(f"{value:,.0f} at {_elapsed(t)}" for t, value in one.steps))
        for one in shown
    ]
    return _figure(chart_id, title, svg, _legend(shown), rows, ("Team", "Best score after"))


def bar_chart(chart_id: str, title: str, desc: str, bars: Sequence[tuple[str, float]]) -> str:
    """Horizontal bars, one a name, longest first as given, with the values as a table."""
    shown = list(bars)[:SERIES_MOST]
    top = max((value for _, value in shown), default=0.0) or 1.0
    row_h, label_w = 22, 150
    height = TOP + BOTTOM + row_h * max(len(shown), 1)
    plot_w = WIDTH - label_w - RIGHT - 40
    parts = []
    for n, (name, value) in enumerate(shown):
        at = TOP + n * row_h
        width = max(plot_w * max(value, 0.0) / top, 1.0)
        parts.append(
            f'<text class="tick" x="{label_w - 6}" y="{at + 15}" text-anchor="end">'
            f"{e(_clip(name))}</text>"
            f'<rect class="bar series-{n}" x="{label_w}" y="{at + 3}" width="{width:.1f}" '
            f'height="{row_h - 6}"/>'
            f'<text class="tick" x="{label_w + width + 4:.1f}" y="{at + 15}">{value:g}</text>'
        )
    svg = _svg(chart_id, title, desc, "".join(parts), height)
    rows = [(name, f"{value:g}") for name, value in shown]
    return _figure(chart_id, title, svg, "", rows, ("Player", "Wins"))


def _svg(chart_id: str, title: str, desc: str, inner: str, height: int = HEIGHT) -> str:
    return (
        f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-labelledby="{chart_id}-title {chart_id}-desc" preserveAspectRatio="xMinYMin meet">'
        f'<title id="{chart_id}-title">{e(title)}</title>'
        f'<desc id="{chart_id}-desc">{e(desc)}</desc>{inner}</svg>'
    )


def _legend(shown: Sequence[Series]) -> str:
    items = "".join(
        f'<li><span class="swatch series-{n}" aria-hidden="true"></span>{e(one.name)}</li>'
        for n, one in enumerate(shown)
    )
    return f'<ul class="legend" aria-label="Legend">{items}</ul>' if items else ""


def _figure(
    chart_id: str,
    title: str,
    svg: str,
    legend: str,
    rows: Sequence[tuple[str, str]],
    heads: tuple[str, str],
) -> str:
    body = "".join(f"<tr><td>{e(a)}</td><td>{e(b)}</td></tr>" for a, b in rows)
    table = (
        f"<details><summary>The chart's data as a table</summary>"
        f'<div class="scroll"><table><thead><tr><th scope="col">{e(heads[0])}</th>'
        f'<th scope="col">{e(heads[1])}</th></tr></thead><tbody>{body}</tbody></table></div>'
        f"</details>"
    )
    return (
        f'<figure class="chart-box" id="{chart_id}"><figcaption>{e(title)}</figcaption>'
        f"{svg}{legend}{table}</figure>"
    )


def _elapsed(seconds: float) -> str:
    minutes = int(seconds // 60)
    return f"{minutes // 60} h {minutes % 60:02d} min"


def _clip(name: str, most: int = 20) -> str:
    return name if len(name) <= most else name[: most - 1] + "…"
