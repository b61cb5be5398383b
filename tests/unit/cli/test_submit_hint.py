"""`tilejudge submit` shows the hint the server gives with an upload it accepted but that is
most likely not what was meant (the other game's format, empty, not text)."""

from __future__ import annotations

import io
import json

import httpx

from cli.client import run_submit

RECEIPT = {
    "id": "0" * 32,
    "sha256": "1" * 64,
    "received_at": "2026-12-01T23:23:26.465003Z",
    "receipt": "2" * 64,
    "log_leaf": 3,
}


def submitted(answer: dict[str, object]) -> tuple[int, str, str]:
    def reply(request: httpx.Request) -> httpx.Response:
        return httpx.Response(202, content=json.dumps(answer))

    out, err = io.StringIO(), io.StringIO()
    code = run_submit(
        b"#crosstiles 1\n", "demo", "tj_token", "http://127.0.0.1:9", False,
        environ={}, out=out, err=err, transport=httpx.MockTransport(reply),
    )  # fmt: skip
    return code, out.getvalue(), err.getvalue()


def test_the_hint_is_said_after_the_receipt() -> None:
    hint = "the upload reads as a crosstiles upload, but this contest's game is wordytaire: ..."
    code, out, err = submitted(RECEIPT | {"hint": hint})
    assert code == 0
    assert out.startswith(f"id          {RECEIPT['id']}\n")
    assert err == f"tilejudge: note: {hint}\n"


def test_without_a_hint_nothing_more_is_said() -> None:
    assert submitted(RECEIPT)[2] == ""
