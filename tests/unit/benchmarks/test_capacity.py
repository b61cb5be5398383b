"""The capacity benchmark's offline judging, on a tiny corpus: the figure its tables size the
workers from must come from the engine the workers run."""

from __future__ import annotations

from benchmarks.capacity import offline_judging_ms
from devstack.plan import Corpus
from judge import Lexicon
from judge.wordytaire import default_layout, judge


def test_offline_judging_times_the_engine_over_the_corpus() -> None:
    lexicon = Lexicon.from_bytes(b"cat\ncab\n")
    uploads = [b"0 0 1 0 cat\n", b"0 0 0 1 cab\n0 0 1 0 cat\n"]
    corpus = Corpus(
        uploads, [judge(u, lexicon, default_layout()).total for u in uploads], lexicon, ""
    )

    assert offline_judging_ms(corpus, passes=1) > 0
