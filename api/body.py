"""Reading a request's body within a size limit and a time limit, and taking an upload's bytes
out of a text/plain or multipart/form-data body."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Request
from starlette.datastructures import FormData, Headers
from starlette.formparsers import MultiPartParser

from api.errors import RequestTimeout, TooLarge, UnsupportedMediaType
from core.errors import Invalid

UPLOAD_READ_SECONDS = 60.0  # a body still arriving after this is refused with 408
# Room for a multipart body's boundaries and part headers around a file at the upload limit.
MULTIPART_OVERHEAD_BYTES = 64 * 1024
PLAIN_TYPES = ("text/plain", "application/octet-stream", "")


async def upload_bytes(request: Request, limit: int) -> bytes:
    """An upload's bytes: the whole text/plain body, or the multipart field `file`."""
    content_type = request.headers.get("content-type", "text/plain").split(";")[0].strip().lower()
    if content_type in PLAIN_TYPES:
        return await read_body(request, limit)
    if content_type != "multipart/form-data":
        raise UnsupportedMediaType(f"send text/plain or multipart/form-data, not {content_type!r}")
    raw = await read_body(request, limit + MULTIPART_OVERHEAD_BYTES)
    async with _multipart_form(request.headers, raw) as form:
        upload = form.get("file")
        if upload is None or isinstance(upload, str):
            raise Invalid("multipart upload needs a file field named 'file'")
        data = await upload.read()
    if len(data) > limit:
        raise TooLarge(f"upload is over the {limit}-byte limit")
    return data


async def read_body(request: Request, limit: int) -> bytes:
    """The body, refused with 413 once it is known to pass `limit` (by its declared length, or
    as it streams in: memory stays bounded) and with 408 if it arrives too slowly."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise TooLarge(f"upload is over the {limit}-byte limit")
    try:
        async with asyncio.timeout(UPLOAD_READ_SECONDS):
            return await _bounded(request, limit)
    except TimeoutError:
        raise RequestTimeout(
            f"the upload took over {UPLOAD_READ_SECONDS:.0f} s to arrive"
        ) from None


async def _bounded(request: Request, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise TooLarge(f"upload is over the {limit}-byte limit")
        chunks.append(chunk)
    return b"".join(chunks)


@asynccontextmanager
async def _multipart_form(headers: Headers, raw: bytes) -> AsyncIterator[FormData]:
    """The form in `raw`, parsed as `request.form()` would (same part limits; a malformed body
    raises `MultiPartException`), then closed: file parts may be spooled to temporary files."""
    form = await MultiPartParser(headers, _replay(raw)).parse()
    try:
        yield form
    finally:
        await form.close()


async def _replay(raw: bytes) -> AsyncGenerator[bytes, None]:
    yield raw
