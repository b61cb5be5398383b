"""`tilejudge up --demo` started again names the word list its contest is judged with now, not
the one it first made the contest with."""

from __future__ import annotations

from pathlib import Path

import pytest

from devstack import demo
from devstack.testing.pipeline import ADMIN, ADMIN_TOKEN, drain, open_pipeline
from devstack.testing.word_lists import cached_list
from tests.unit.api.test_rejudge import run_rejudge_work


def test_a_restart_after_a_rejudge_names_the_list_the_contest_now_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(demo, "MOVES", 40)
    lists = tmp_path / "lists"
    lists.mkdir()  # no crosstiles.txt beside the list: the Wordytaire contest alone
    words = cached_list("words_alpha_2020-08-24.txt").read_bytes().splitlines(keepends=True)
    (lists / "words.txt").write_bytes(b"".join(words[::10]))
    home = tmp_path / "home"
    home.mkdir()
    with open_pipeline(tmp_path) as pipe:

        def load() -> str:
            demo.load_demo(
                "http://testserver", ADMIN_TOKEN, lists / "words.txt", home,
                transport=pipe.client._transport, wait=False,
            )  # fmt: skip
            return capsys.readouterr().out

        first = load()
        drain(pipe.services)
        pipe.add_lexicon(name="fixed")
        run = pipe.client.post(
            f"/v1/contests/{demo.CONTEST}/rejudges", json={"lexicon": "fixed"}, headers=ADMIN
        )
        assert run.status_code == 202, run.text
        run_rejudge_work(pipe)
        applied = pipe.client.post(f"/v1/rejudges/{run.json()['id']}/apply", headers=ADMIN)
        assert applied.status_code == 200, applied.text
        again = load()

    assert "demo: contest 'demo' judged with the word list words_alpha_2020-08-24\n" in first
    assert "demo: contest 'demo' and its teams already exist\n" in again
    assert "demo: contest 'demo' judged with the word list fixed\n" in again
