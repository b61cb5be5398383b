"""The message contract between intake, the sweeper and the workers: queue and task names, and
how a group of uploads is cut into messages. Celery sends them (`infra.publisher`); the worker
tasks (`workers.celery_app`) take them by these names."""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence

from core import tuning

LIVE_QUEUE = "live"  # uploads: always taken first
BULK_QUEUE = "bulk"  # rejudge work
JUDGE_GROUP_TASK = "tilejudge.judge_group"  # args: submission ids; bytes, KEPT_MARK or None
REJUDGE_PRODUCE_TASK = "tilejudge.rejudge_produce"  # args: run id
REJUDGE_BATCH_TASK = "tilejudge.rejudge_batch"  # args: run id, submission ids
MAKE_REPORT_TASK = "tilejudge.make_report"  # args: a submission id (a heavy upload's report)
FORGET_UPLOADS_COMMAND = "tilejudge_forget_uploads"  # a broadcast: digests the hosts' caches drop
PRELOAD_COMMAND = "tilejudge_preload"  # a broadcast: word list ids every worker host loads

Upload = tuple[str, bytes | None]  # a submission id, and its bytes where they may ride along


def held_queue(host: str) -> str:
    """The queue of the rejudge batches whose uploads the worker host `host` holds
    (`infra.bulk_hosts`)."""
    return f"{BULK_QUEUE}.{host}"


# kombu's Redis transport keeps priorities 0, 3, 6 and 9 in lists of their own and takes from
# the lowest number first. Light uploads go at 0; a team's heavy ones at 3, 6, then 9.
LIGHT_PRIORITY = 0
HEAVY_PRIORITIES = (3, 6, 9)


def heavy_priority(recent_heavy: int) -> int:
    """The priority of a team's heavy upload, given how many heavy ones it sent just before: a
    team's first heavy upload waits behind no other team's second, and so on, so a team that
    floods waits behind its own work rather than others waiting behind it."""
    return HEAVY_PRIORITIES[min(recent_heavy, len(HEAVY_PRIORITIES) - 1)]


def split_group(uploads: Sequence[Upload], spread: int = 1) -> list[list[Upload]]:
    """The messages for a group of uploads: at least `spread` of them (so that many idle worker
    processes share a small group at once), at most GROUP_MOST uploads each, in order."""
    if not uploads:
        return []
    most = tuning.GROUP_MOST
    count = max(min(len(uploads), spread), -(-len(uploads) // most))
    size = -(-len(uploads) // count)
    return [list(uploads[start : start + size]) for start in range(0, len(uploads), size)]


def group_args(
    uploads: Sequence[Upload], beside: bool = False
) -> tuple[list[str], list[str | None]]:
    """A group message's arguments: the ids, and each upload's bytes (`carried`), or
    KEPT_MARK where `beside` (the publisher keeps the bytes beside the message), or None."""
    room = tuning.GROUP_INLINE
    inline: list[str | None] = []
    for _, data in uploads:
        if data is not None and len(data) <= min(room, tuning.INLINE_LIMIT):
            inline.append(KEPT_MARK if beside else carried(data))
            room -= len(data)
        else:
            inline.append(None)
    return [sid for sid, _ in uploads], inline


def kept_beside(submission_ids: Sequence[str], inline: Sequence[str | None]) -> list[str]:
    """The uploads of a group message whose bytes wait beside it (KEPT_MARK)."""
    return [sid for sid, data in zip(submission_ids, inline, strict=False) if data == KEPT_MARK]


# Text: printable characters and the line breaks and tabs a text file has, no other control
# character. JSON carries ASCII as it is (a line break as two characters), where base64 makes
# every three bytes four; a character beyond ASCII goes as a \uXXXX escape (six characters for
# its two to four bytes), so text goes as text while at most one byte in TEXT_EXTRA_MOST is
# part of one (a word list's accented words), and in base64 otherwise.
TEXT_EXTRA_MOST = 16
TEXT_MARK = "~"  # not in base64's alphabet
# In place of the bytes: they wait beside the message, in the broker under a key of their own
# (`infra.broker_copies`), where JSON never escapes them and the worker's parent never copies
# them. Not in base64's alphabet either: a worker of a version before it decodes it as no
# bytes, which fail the upload's digest, and reads S3.
KEPT_MARK = "^"
# The bytes text may hold: deleting them leaves an upload's control bytes (C0 ones and DEL),
# found in C at a few µs for 40 KB, where a regular expression over it takes tens.
_TEXT_BYTES = bytes(c for c in range(256) if c in b"\t\n\r" or 0x20 <= c <= 0x7E or c >= 0x80)
_C1_CONTROL = re.compile("[\x80-\x9f]")  # in UTF-8, a 0xC2 byte and one of 0x80-0x9F


def carried(data: bytes) -> str:
    """An upload's bytes as a message carries them: text (valid UTF-8, see `_TEXT_BYTES`)
    after TEXT_MARK, anything else in base64. UTF-8 text decodes and encodes back to the same
    bytes, and the worker checks each upload's SHA-256 all the same. (A worker of a version
    before TEXT_MARK, or before text beyond ASCII was carried as text, fails such a message
    during a rolling upgrade; its uploads stay queued and the sweeper publishes them again
    after TILEJUDGE_REQUEUE_AFTER, so one is late, never lost or judged wrong.)"""
    if not data.translate(None, _TEXT_BYTES):
        text = _utf8(data)
        if (
            text is not None
            and (len(data) - len(text)) * TEXT_EXTRA_MOST <= len(data)
            and (b"\xc2" not in data or _C1_CONTROL.search(text) is None)
        ):
            return TEXT_MARK + text
    return base64.b64encode(data).decode("ascii")


def _utf8(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def unpack_group(submission_ids: Sequence[str], inline: Sequence[str | None]) -> dict[str, bytes]:
    """The bytes a group message carried, by submission id."""
    return {
        sid: _bytes(data)
        for sid, data in zip(submission_ids, inline, strict=False)
        if data is not None and data != KEPT_MARK
    }


def _bytes(data: str) -> bytes:
    if data.startswith(TEXT_MARK):
        return data[len(TEXT_MARK) :].encode("utf-8")
    return base64.b64decode(data)
