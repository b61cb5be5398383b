"""The public privacy page: what tilejudge stores about teams and results, rendered as HTML from
the `privacy.md` shipped in this package, with a stylesheet of its own."""

from __future__ import annotations

import functools
import html
from importlib import resources

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response
from markdown_it import MarkdownIt

router = APIRouter()

STYLESHEET = "/static/privacy.css"
# The page loads its stylesheet from this origin and nothing else: no script, no frame.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src data:; "
    "form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


@router.get("/privacy", response_class=HTMLResponse, tags=["public"])
async def privacy() -> HTMLResponse:
    """What tilejudge stores about teams and results, who reads it, how it is deleted."""
    return HTMLResponse(_page(), headers=SECURITY_HEADERS)


@router.get(STYLESHEET, include_in_schema=False)
def stylesheet() -> Response:
    css = resources.files("api").joinpath("static", "privacy.css").read_bytes()
    headers = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}
    return Response(css, media_type="text/css", headers=headers)


def render_markdown(text: str) -> str:
    """CommonMark with tables; HTML written in the source is shown as text, never passed on."""
    return str(_markdown().render(text))


@functools.cache
def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False}).enable("table")


@functools.cache
def _page() -> str:
    text = resources.files("api").joinpath("privacy.md").read_text(encoding="utf-8")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tilejudge · privacy</title><link rel="icon" href="data:,">
<link rel="stylesheet" href="{html.escape(STYLESHEET)}"></head>
<body><main>
{render_markdown(text)}</main></body></html>
"""
