"""How a judge report is kept in S3: its JSON gzipped at level 1, about a fifth of the size
(level 1 costs little CPU and JSON of repeated verdicts packs well), labelled `Content-Encoding: gzip`
for anyone reading the bucket directly. Reports written before they were packed are plain
JSON; both read back alike (a JSON document never starts with gzip's magic bytes).

A report is packed from pieces and read back as a stream, a bounded piece at a time: neither
the worker that writes it nor the API that serves it ever holds the whole JSON. Each verdict
sits on a line of its own (reports written before that are one line), which is what lets
`runs` collapse repeated verdicts as they stream past. What unpacking may produce is capped
(`max_report_bytes`): a stored object that inflates past it is refused, not inflated.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Iterable, Iterator

from core import tuning
from core.errors import Invalid

CONTENT_TYPE = "application/json"
CONTENT_ENCODING = "gzip"
_MAGIC = b"\x1f\x8b"


_PIECE = 256 * 1024  # the most one step of unpacking produces


class ReportTooLarge(Invalid):
    """A report's JSON is past `max_report_bytes`."""


def max_report_bytes(max_upload_bytes: int) -> int:
    """The cap on a report's JSON. A verdict is at most about 120 bytes of JSON and a two-byte
    line ("a\\n") is the shortest that gets one, so the largest upload's report is about 60
    times its size; twice that leaves room for long details."""
    return 128 * max_upload_bytes + (1 << 20)


def most_report_bytes(upload_bytes: int) -> int:
    """A bound on the JSON of any report of an upload this size, whatever its lines say: a
    verdict is at most about 120 bytes of JSON for a line of at least two bytes, a detail or
    a word quotes at most its line (escaped, six bytes a byte at worst), and the head and the
    totals are a few KB. The worst kinds of line come to about 57 bytes of JSON a byte, and
    `tests/unit/api/test_lazy_reports.py` holds them to half the bound. It is `max_report_bytes`'
    rate, so every upload within the upload limit is `deferrable` under the default cap."""
    return 128 * upload_bytes + 64 * 1024


def deferrable(upload_bytes: int, limit: int) -> bool:
    """Whether an upload's report is left to be made when it is first read (`core.reports`)
    rather than stored by the worker that judges it: one whose report cannot reach the cap
    `limit` whatever it says, so that not building it skips no ReportTooLarge the worker would
    have raised. Most reports are never read, and a near-limit upload's costs about half as
    much again as judging it (`docs/performance.md`)."""
    return most_report_bytes(upload_bytes) <= limit


def made_by_reader(upload_bytes: int) -> bool:
    """Whether a deferred report is made by the process that first reads it (a light upload,
    `tuning.HEAVY_BYTES`: judged again in milliseconds) rather than asked of a worker (a heavy
    one, seconds of judging that an API process must not spend)."""
    return upload_bytes <= tuning.HEAVY_BYTES


def pack(report_json: bytes) -> bytes:
    return gzip.compress(report_json, compresslevel=1, mtime=0)


def pack_pieces(pieces: Iterable[bytes], limit: int) -> bytes:
    """Gzip the JSON's pieces as they come (the same format as `pack`); ReportTooLarge once
    more than `limit` bytes of JSON have come."""
    packer = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    out = []
    size = 0
    for piece in pieces:
        size += len(piece)
        if size > limit:
            raise ReportTooLarge(f"the report would be over {limit} bytes of JSON")
        out.append(packer.compress(piece))
    out.append(packer.flush())
    return b"".join(out)


def is_packed(stored: bytes) -> bool:
    return stored[:2] == _MAGIC


def unpack(stored: bytes) -> bytes:
    """The report's JSON, from what `pack` wrote or from a plain JSON report."""
    return gzip.decompress(stored) if is_packed(stored) else stored


def packed_stream(pieces: Iterable[bytes]) -> Iterator[bytes]:
    """Gzip as the pieces come, one packed piece per piece (what `pack` would write)."""
    packer = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    for piece in pieces:
        packed = packer.compress(piece)
        if packed:
            yield packed
    yield packer.flush()


def unpacked(stored: Iterable[bytes], limit: int) -> Iterator[bytes]:
    """The report's JSON from a stream of what `pack` or `pack_pieces` stored (or of a plain JSON
    report), at most _PIECE bytes per piece and ReportTooLarge past `limit` bytes in all."""
    chunks = iter(stored)
    first = b""
    for first in chunks:
        if first:
            break
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS) if is_packed(first) else None
    size = 0
    for chunk in _prepend(first, chunks):
        pending = chunk
        while pending:
            if inflater is None:
                piece, pending = pending[:_PIECE], pending[_PIECE:]
            else:
                piece = inflater.decompress(pending, _PIECE)
                pending = inflater.unconsumed_tail
            size += len(piece)
            if size > limit:
                raise ReportTooLarge(f"the stored report unpacks to over {limit} bytes")
            if piece:
                yield piece
    if inflater is not None and not inflater.eof:
        raise ValueError("the stored report ends before its gzip stream does")


def _prepend(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    yield first
    yield from rest


# One verdict line of a stored report: its number, then what it says (with its comma, if any).
_VERDICT = re.compile(rb'\{"line":([0-9]+),("ok":false,.*\})(,?)')


def runs(json_pieces: Iterable[bytes], max_line: int = 1 << 20) -> Iterator[bytes]:
    """The report with every run of consecutive identical illegal verdicts (same reason, same
    detail) as one object: the first's, plus `"through"` (the last one's line) and `"count"`.
    A report stored before verdicts had lines of their own passes through unchanged."""
    buffer = b""
    run: _Run | None = None
    out: list[bytes] = []
    line_by_line: bool | None = None
    for piece in json_pieces:
        buffer += piece
        if line_by_line is None:
            if b"\n" not in buffer and len(buffer) < max_line:
                continue
            line_by_line = buffer.partition(b"\n")[0].endswith(b'"lines":[')
        if not line_by_line:
            yield buffer
            buffer = b""
            continue
        *lines, buffer = buffer.split(b"\n")
        if len(buffer) > max_line:
            raise ReportTooLarge(f"a line of the stored report is over {max_line} bytes")
        for line in lines:
            verdict = _VERDICT.fullmatch(line)
            if verdict is not None and run is not None and verdict[2] == run.says:
                run.last, run.comma = verdict[1], verdict[3]
                run.count += 1
                continue
            if run is not None:
                out.append(run.json())
                run = None
            if verdict is not None:
                run = _Run(verdict[1], verdict[2], verdict[1], verdict[3])
            else:
                out.append(line + b"\n")
        if out:
            yield b"".join(out)
            out = []
    if run is not None:
        yield run.json()
    if buffer:
        yield buffer


class _Run:
    """Consecutive identical illegal verdicts: the first's line and words, the last's line."""

    __slots__ = ("comma", "count", "first", "last", "says")

    def __init__(self, first: bytes, says: bytes, last: bytes, comma: bytes) -> None:
        self.first, self.says, self.last, self.comma = first, says, last, comma
        self.count = 1

    def json(self) -> bytes:
        extra = b""
        if self.count > 1:
            extra = b',"through":' + self.last + b',"count":' + str(self.count).encode()
        return b'{"line":' + self.first + b"," + self.says[:-1] + extra + b"}" + self.comma + b"\n"


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


def report_key(submission_id: str, lexicon_id: str, rules_id: str) -> str:
    return f"reports/{submission_id}/{lexicon_id}-{rules_id}.json"


def report_ruleset(key: str, submission_id: str) -> tuple[str, str] | None:
    """The word list and rules data a report key names (`report_key`'s ids are hex digests):
    the ruleset its report is judged under, which a result carried over to another list (an
    affected-only rejudge) does not share, since it keeps the report it had. None for a key
    of another shape."""
    prefix = f"reports/{submission_id}/"
    if not (key.startswith(prefix) and key.endswith(".json")):
        return None
    lexicon_id, dash, rules_id = key[len(prefix) : -len(".json")].partition("-")
    return (lexicon_id, rules_id) if dash and lexicon_id and rules_id else None
