"""A team's deletion reaches each worker host's upload cache through a broadcast its parent
answers: the command's name is the one the API sends."""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import SimpleNamespace

import pytest

from core.messages import FORGET_UPLOADS_COMMAND
from infra import compose
from infra.settings import Settings
from workers import celery_app


def test_the_broadcast_zeroes_the_uploads_in_the_hosts_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings.from_env({"TILEJUDGE_HOME": str(tmp_path)})
    monkeypatch.setattr(celery_app, "host", lambda: SimpleNamespace(settings=settings))
    data = b"0 0 2 0 cat\n"
    sha = hashlib.sha256(data).hexdigest()
    compose.upload_cache(settings).put(sha, data)

    answer = celery_app.tilejudge_forget_uploads(None, [sha])

    assert answer == {"ok": "forgot 1"}
    assert compose.upload_cache(settings).get(sha) is None
    [segment] = (tmp_path / "upload-cache").glob("*.seg")
    assert data not in segment.read_bytes()


def test_the_command_is_registered_under_the_name_the_api_broadcasts() -> None:
    assert celery_app.tilejudge_forget_uploads.__name__ == FORGET_UPLOADS_COMMAND
