"""A worker that starts while a word list is registered, or a contest created, looks again once
it listens for broadcasts: what it missed is loaded in its parent and the pool reforked, so the
processes share it; with nothing missed, the pool is left alone."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from devstack.testing.pipeline import ADMIN, TINY_WORDS, open_pipeline
from infra.rulesets import RulesetCache
from judge import Lexicon
from workers import celery_app


class FakePool:
    def __init__(self) -> None:
        self.restarts = 0

    def restart(self) -> None:
        self.restarts += 1


def test_what_was_registered_meanwhile_is_loaded_and_the_pool_reforked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_pipeline(tmp_path) as pipe:
        rulesets = RulesetCache(pipe.store, pipe.blobs, tmp_path / "rulesets")
        parts = SimpleNamespace(settings=pipe.services.settings, rulesets=rulesets)
        monkeypatch.setattr(celery_app, "host", lambda: parts)
        pool = FakePool()
        consumer = SimpleNamespace(controller=SimpleNamespace(pool=pool))
        pipe.add_contest("open")  # registers the tiny list: what `worker_init` saw
        rulesets.preload_more([Lexicon.from_bytes(_words(TINY_WORDS)).id])

        celery_app._preload_what_came_meanwhile(sender=consumer)
        assert pool.restarts == 0  # nothing missed

        words = _words((*TINY_WORDS, "bet"))
        response = pipe.client.post(
            "/v1/lexicons",
            params={"name": "fix"},
            content=words,
            headers={**ADMIN, "Content-Type": "text/plain"},
        )
        assert response.status_code == 201, response.text  # its broadcast went unheard

        celery_app._preload_what_came_meanwhile(sender=consumer)

        assert pool.restarts == 1
        assert rulesets.shares(Lexicon.from_bytes(words).id)


def _words(words: tuple[str, ...]) -> bytes:
    return "".join(word + "\n" for word in words).encode()
