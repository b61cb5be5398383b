"""The per-team storage quota at the edge: an upload over the day's bytes is answered 429 with
a Retry-After that runs to midnight UTC, and nothing is stored."""

from __future__ import annotations

from pathlib import Path

from core.quota import InMemoryDailyBytes, StorageQuota
from devstack.testing.pipeline import open_pipeline


def test_a_team_over_its_daily_storage_quota_gets_429_until_midnight_utc(tmp_path: Path) -> None:
    with open_pipeline(tmp_path) as pipe:
        pipe.services.intake.quota = StorageQuota(InMemoryDailyBytes(), 20)
        pipe.add_contest("open")
        team, other = pipe.add_team("ravens"), pipe.add_team("crows")
        assert pipe.upload(team, b"0 0 2 0 cat\n").status_code == 202  # 12 bytes

        refused = pipe.upload(team, b"0 0 2 0 tea\n")

        assert refused.status_code == 429
        assert refused.json()["error"] == "rate_limited"
        assert "at most 20 bytes of uploads per team per day" in refused.json()["detail"]
        assert 0 < int(refused.headers["Retry-After"]) <= 24 * 3600
        assert pipe.store.count_by_state() == {"queued": 1}
        assert len(pipe.uploads()) == 1
        assert pipe.upload(other, b"0 0 2 0 tea\n").status_code == 202  # the quota is per team
