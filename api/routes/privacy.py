"""The public privacy page: what tilejudge stores about teams and results, rendered from the
`privacy.md` shipped in this package."""

from __future__ import annotations

import html
from importlib import resources

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

router = APIRouter()


@router.get("/privacy", response_class=HTMLResponse, tags=["public"])
def privacy() -> str:
    """What tilejudge stores about teams and results, who reads it, how it is deleted."""
    text = resources.files("api").joinpath("privacy.md").read_text(encoding="utf-8")
    return (
        f"<!doctype html><meta charset=utf-8><title>Privacy</title><pre>{html.escape(text)}</pre>"
    )
