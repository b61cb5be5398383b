"""The API's reference pages, `/docs` (Swagger UI) and `/redoc`, served whole from this origin.

Their scripts and styles are package data of the pinned `fastapi-offline` wheel, served under
`/static/docs/`, so the pages work without internet; a Content-Security-Policy on each page lets
it load nothing from any other host.
"""

from __future__ import annotations

import functools
import hashlib
import html
from importlib import resources

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_redoc_html
from fastapi.responses import HTMLResponse, Response

from core.errors import NotFound

router = APIRouter()

STATIC_PREFIX = "/static/docs"
_BUNDLES = resources.files("fastapi_offline") / "static"
_OWN = resources.files("api") / "static"
# name under /static/docs/ -> (the file, its media type)
ASSETS = {
    "swagger-ui-bundle.js": (_BUNDLES / "swagger-ui-bundle.js", "text/javascript"),
    "swagger-ui.css": (_BUNDLES / "swagger-ui.css", "text/css"),
    "redoc.standalone.js": (_BUNDLES / "redoc.standalone.js", "text/javascript"),
    "favicon.png": (_BUNDLES / "favicon.png", "image/png"),
    "swagger-init.js": (_OWN / "swagger-init.js", "text/javascript"),
}
# ReDoc's side menu shows its vendor's logo from the vendor's CDN, with no option to leave it
# out. Pointed at an empty data: URL instead, the image fails to decode and ReDoc drops it, so
# the page asks no other host for anything.
PATCHES = {"redoc.standalone.js": (b"https://cdn.redoc.ly/redoc/logo-mini.svg", b"data:,")}
_COMMON_POLICY = (
    "default-src 'none'; script-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
)
SWAGGER_POLICY = f"{_COMMON_POLICY}; style-src 'self'"
# ReDoc injects its styles as <style> elements and runs its search index in a Worker made from
# a blob: URL of its own code.
REDOC_POLICY = f"{_COMMON_POLICY}; style-src 'self' 'unsafe-inline'; worker-src blob:"
_PAGE_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


@router.get("/docs", include_in_schema=False)
async def swagger_ui(request: Request) -> HTMLResponse:
    """Swagger UI. The page is written here rather than by FastAPI's `get_swagger_ui_html`, whose
    inline start-up script a strict policy would have to allow: `swagger-init.js` does its part,
    reading the schema's URL from its own `data-openapi-url`."""
    root = request.scope.get("root_path", "")
    static = html.escape(f"{root}{STATIC_PREFIX}")
    schema = html.escape(f"{root}{request.app.openapi_url}")
    title = html.escape(f"{request.app.title} API · Swagger UI")
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="icon" href="{static}/favicon.png">
<link rel="stylesheet" href="{static}/swagger-ui.css">
</head><body>
<div id="swagger-ui"></div>
<script src="{static}/swagger-ui-bundle.js"></script>
<script src="{static}/swagger-init.js" data-openapi-url="{schema}"></script>
</body></html>
"""
    return HTMLResponse(page, headers=_PAGE_HEADERS | {"Content-Security-Policy": SWAGGER_POLICY})


@router.get("/redoc", include_in_schema=False)
async def redoc(request: Request) -> HTMLResponse:
    root = request.scope.get("root_path", "")
    page = get_redoc_html(
        openapi_url=f"{root}{request.app.openapi_url}",
        title=f"{request.app.title} API · ReDoc",
        redoc_js_url=f"{root}{STATIC_PREFIX}/redoc.standalone.js",
        redoc_favicon_url=f"{root}{STATIC_PREFIX}/favicon.png",
        with_google_fonts=False,
    )
    page.headers.update(_PAGE_HEADERS | {"Content-Security-Policy": REDOC_POLICY})
    return page


@router.get(STATIC_PREFIX + "/{name}", include_in_schema=False)
async def asset(name: str, request: Request) -> Response:
    if name not in ASSETS:
        raise NotFound(f"no docs asset {name[:64]!r}")
    content, etag = _asset(name)
    # The files change only with the installed packages: the browser keeps them and asks again
    # with their ETag, answered 304 while they are the same.
    headers = {"Cache-Control": "no-cache", "ETag": etag, "X-Content-Type-Options": "nosniff"}
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers=headers)
    return Response(content, media_type=ASSETS[name][1], headers=headers)


@functools.cache
def _asset(name: str) -> tuple[bytes, str]:
    """An asset's bytes (patched where `PATCHES` says) and its ETag, read once per process."""
    content = ASSETS[name][0].read_bytes()
    if name in PATCHES:
        old, new = PATCHES[name]
        content = content.replace(old, new)
    return content, f'"{hashlib.sha256(content).hexdigest()[:32]}"'
