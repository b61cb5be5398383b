"""The offline judging the capacity benchmark sizes the workers from, on a tiny corpus: the
figure must come from the engine the workers run."""

from __future__ import annotations

import pytest

from devstack.plan import Corpus
from devstack.testing import wordytaire_engines
from devstack.testing.wordytaire_engines import offline_judging_ms
from judge import Lexicon
from judge.wordytaire import Layout, Report, default_layout, judge


def test_offline_judging_times_the_installed_engine_over_the_whole_corpus_each_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lexicon = Lexicon.from_bytes(b"cat\ncab\n")
    uploads = [b"0 0 1 0 cat\n", b"0 0 0 1 cab\n0 0 1 0 cat\n"]
    corpus = Corpus(
        uploads, [judge(u, lexicon, default_layout()).total for u in uploads], lexicon, ""
    )
    judged: list[bytes] = []

    def counted(data: bytes, words: Lexicon, layout: Layout) -> Report:
        judged.append(data)
        return judge(data, words, layout)

    assert wordytaire_engines.installed_judge is judge  # what the workers import
    monkeypatch.setattr(wordytaire_engines, "installed_judge", counted)

    assert offline_judging_ms(corpus, passes=2) > 0
    assert judged == uploads * 2
