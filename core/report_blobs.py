"""How a judge report is kept in S3: its JSON gzipped at level 1, about a fifth of the size
(level 1 costs little CPU and JSON of repeated verdicts packs well), labelled `Content-Encoding: gzip`
for anyone reading the bucket directly. Reports written before they were packed are plain
JSON; both read back alike (a JSON document never starts with gzip's magic bytes).
"""

from __future__ import annotations

import gzip

CONTENT_TYPE = "application/json"
CONTENT_ENCODING = "gzip"
_MAGIC = b"\x1f\x8b"


def pack(report_json: bytes) -> bytes:
    return gzip.compress(report_json, compresslevel=1, mtime=0)


def is_packed(stored: bytes) -> bool:
    return stored[:2] == _MAGIC


def unpack(stored: bytes) -> bytes:
    """The report's JSON, from what `pack` wrote or from a plain JSON report."""
    return gzip.decompress(stored) if is_packed(stored) else stored


def accepts_gzip(accept_encoding: str) -> bool:
    """Whether an `Accept-Encoding` header admits gzip: named (or else `*`) without `q=0`."""
    weights: dict[str, float] = {}
    for part in accept_encoding.split(","):
        coding, *params = (piece.strip() for piece in part.split(";"))
        weight = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        weights[coding.lower()] = weight
    named = [weights[c] for c in ("gzip", "x-gzip") if c in weights]
    return max(named) > 0 if named else weights.get("*", 0.0) > 0
