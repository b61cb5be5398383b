"""The skeleton every public page shares: its head (the same-origin stylesheet and script, no
inline script or style, as the strict Content-Security-Policy of `SECURITY_HEADERS` demands),
a skip link, the header with its links, and `main`.

Every value put in a page goes through `e` (team names, titles and reasons come from teams and
organisers)."""

from __future__ import annotations

import html
from urllib.parse import urlencode

from core import clock

STATIC_PREFIX = "/pages/static"
STYLESHEET = f"{STATIC_PREFIX}/scoreboard.css"
SCRIPT = f"{STATIC_PREFIX}/scoreboard.js"


def e(value: object) -> str:
    """HTML-escaped text of any value (quotes too: it may go in an attribute)."""
    return html.escape(str(value), quote=True)


def page(title: str, body: str, *, big: bool = False, nav: str = "", script: bool = True) -> str:
    """A whole page: `body` (HTML already escaped) in `main`; `big` the large type for a
    projector (a class the stylesheet reads, nothing else changes)."""
    classes = "public big" if big else "public"
    tail = f'<script src="{SCRIPT}" defer></script>' if script else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{e(title)} · tilejudge</title><link rel="icon" href="data:,">
<link rel="stylesheet" href="{STYLESHEET}">{tail}</head>
<body class="{classes}">
<a class="skip" href="#main">Skip to the content</a>
<header class="top"><span class="brand">tilejudge</span>
<nav aria-label="Pages"><a href="/contests">Contests</a>{nav}</nav></header>
<main id="main" tabindex="-1">
{body}
</main></body></html>"""


def link(path: str, text: str, **params: object) -> str:
    """A link to `path` with the query `params` that are not None."""
    query = urlencode({k: v for k, v in params.items() if v is not None})
    return f'<a href="{e(path + ("?" + query if query else ""))}">{e(text)}</a>'


def when(text: str | None) -> str:
    """A stored time as `<time>`: its UTC date and time to the second."""
    if not text:
        return ""
    moment = clock.parse_time(text)
    return f'<time datetime="{e(text)}">{e(moment.strftime("%Y-%m-%d %H:%M:%S"))} UTC</time>'


def short_time(text: str) -> str:
    """A stored time to the minute, in words a heading reads well with ("17:00 UTC")."""
    moment = clock.parse_time(text)
    return f'<time datetime="{e(text)}">{e(moment.strftime("%H:%M"))} UTC</time>'


def span(seconds: float) -> str:
    """A duration in words, to the second under an hour, to the minute under a day."""
    whole = max(0, int(seconds))
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"


def seconds_between(start: str, end: str) -> float:
    return (clock.parse_time(end) - clock.parse_time(start)).total_seconds()
