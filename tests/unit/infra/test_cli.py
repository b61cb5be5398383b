"""The `tilejudge` command line: offline judging (human and JSON Lines), generating, errors."""

from __future__ import annotations

import io
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from cli.main import main
from devstack.testing.word_lists import cached_list
from judge import Lexicon
from judge.wordytaire import default_layout
from judge.wordytaire.generator import WordIndex, generate
from judge.wordytaire.layout import LETTERS

WORDS = str(cached_list("words_alpha.txt"))
SPEC_KEYS = {"total", "legal", "illegal", "lexicon", "layout", "lines"}


def write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


@pytest.fixture
def one_tile_each(tmp_path: Path) -> str:
    """A layout whose bag holds a single tile of every letter, so the bag runs out at once."""
    doc = json.loads(default_layout().to_json())
    doc["letters"] = {c: [doc["letters"][c][0], 1] for c in LETTERS}
    return write(tmp_path / "one-tile-each.json", json.dumps(doc).encode())


def test_human_output_gives_the_total_counts_by_reason_and_explains_each_illegal_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], one_tile_each: str
) -> None:
    text = b"0 0 2 0 cat\n\n2 0 2 2 tat\n9 9 9 9 cat\n0 0 2 0 Cat\n1 1 1 1\n0 0 0 2 cow\n"
    path = write(tmp_path / "game.txt", text)

    assert main(["judge", path, "--lexicon", WORDS, "--layout", one_tile_each]) == 0

    out = capsys.readouterr().out.splitlines()
    # cat: c 4 + a 1 + t 2 x2 (L2 at (2, 0)) = 9; cow: reused c 4 + o 2 + w 7 = 13
    assert out[0] == f"{path}: 22 points from 2 legal moves, 4 illegal"
    for count in ("malformed: 1", "bad_letters: 1", "too_short: 1", "bag_empty: 1"):
        assert f"  {count}" in out
    explained = [line.strip() for line in out if line.strip().startswith("line ")]
    assert explained == [
        "line 3: '2 0 2 2 tat': needs 1 'a' but the bag has none left [bag_empty]",
        "line 4: '9 9 9 9 cat': it starts and ends on the same cell; a move covers at least two cells"
        " [too_short]",
        "line 5: '0 0 2 0 Cat': the word 'Cat' has letters other than lower-case a-z [bad_letters]",
        "line 6: '1 1 1 1': a move has 5 fields (x1 y1 x2 y2 word); this line has 4 [malformed]",
    ]


def test_human_output_quotes_the_text_of_each_illegal_line(tmp_path, capsys) -> None:
    path = write(tmp_path / "game.txt", b"0 0 2 0 cat\n9 9 9 9 cat\n")
    assert main(["judge", path, "--lexicon", WORDS]) == 0
    assert "9 9 9 9 cat" in capsys.readouterr().out


def test_json_with_two_files_gives_two_json_lines_in_argument_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], real_lexicon: Lexicon
) -> None:
    second = write(tmp_path / "b.txt", b"0 0 4 0 cyber\n1 1 1 1 at\n")
    first = write(tmp_path / "a.txt", b"0 0 11 0 unneccessary\r\n")

    assert main(["judge", "--json", second, first, "--lexicon", WORDS]) == 0

    reports = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [report["file"] for report in reports] == [second, first]
    for report in reports:
        assert {"file", *SPEC_KEYS} <= set(report)
        assert report["lexicon"] == real_lexicon.id
        assert report["layout"] == default_layout().id
    assert (reports[0]["total"], reports[0]["legal"], reports[0]["illegal"]) == (22, 1, 1)
    assert reports[0]["lines"][0] == {"line": 1, "ok": True, "score": 22, "tiles": 5}
    assert {k: reports[0]["lines"][1][k] for k in ("line", "ok", "reason")} == {
        "line": 2,
        "ok": False,
        "reason": "too_short",
    }
    assert reports[1]["lines"][0]["reason"] == "not_in_dictionary"


def test_generate_is_deterministic_and_its_output_judges_all_legal(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes], word_index: WordIndex
) -> None:
    command = ["generate", "--seed", "7", "--moves", "300", "--illegal-share", "0"]
    command += ["--lexicon", WORDS]
    assert main(command) == 0
    data = capsysbinary.readouterr().out
    assert main(command) == 0
    assert capsysbinary.readouterr().out == data
    assert data == generate(word_index, default_layout(), seed=7, moves=300)
    assert data.count(b"\n") == 300

    assert main(["judge", "--json", write(tmp_path / "bot.txt", data), "--lexicon", WORDS]) == 0
    report = json.loads(capsysbinary.readouterr().out)
    assert (report["legal"], report["illegal"]) == (300, 0)


def test_generate_refuses_a_share_outside_zero_to_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["generate", "--seed", "1", "--moves", "5", "--illegal-share", "1.5"]) == 2
    assert "--illegal-share must be between 0 and 1" in capsys.readouterr().err


def test_a_missing_submission_file_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere.txt"
    assert main(["judge", str(missing), "--lexicon", WORDS]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip() == f"tilejudge: cannot read {missing}: No such file or directory"
    assert captured.out == ""


def test_without_a_lexicon_it_exits_2_and_says_to_run_make_lexicon(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TILEJUDGE_LEXICON_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.delenv("TILEJUDGE_LEXICON", raising=False)
    path = write(tmp_path / "game.txt", b"0 0 2 0 cat\n")

    assert main(["judge", path]) == 2
    assert main(["generate", "--seed", "1", "--moves", "5"]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 2
    assert all(e.startswith("tilejudge: no lexicon") and "make lexicon" in e for e in errors)


def test_a_lexicon_path_that_does_not_exist_exits_2(tmp_path, capsys) -> None:
    path = write(tmp_path / "game.txt", b"0 0 2 0 cat\n")
    assert main(["judge", path, "--lexicon", str(tmp_path / "no-words.txt")]) == 2
    assert "no lexicon at" in capsys.readouterr().err


def test_the_lexicon_comes_from_the_environment_when_not_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    words = write(tmp_path / "words.txt", b"cat\r\nat\r\n")
    monkeypatch.setenv("TILEJUDGE_LEXICON", words)
    path = write(tmp_path / "game.txt", b"0 0 2 0 cat\n0 0 0 1 ca\n")

    assert main(["judge", "--json", path]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["lexicon"] == Lexicon.from_words({"cat", "at"}).id
    assert [line.get("reason") for line in report["lines"]] == [None, "not_in_dictionary"]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("words.txt", b"cat\nDog\n", "line 2: 'Dog'"),
        ("layout.json", b"{not json", "not JSON"),
    ],
)
def test_a_bad_word_list_or_layout_exits_2_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, content: bytes, message: str
) -> None:
    bad = write(tmp_path / name, content)
    path = write(tmp_path / "game.txt", b"0 0 2 0 cat\n")
    option = "--lexicon" if name.endswith(".txt") else "--layout"
    lexicon = [] if option == "--lexicon" else ["--lexicon", WORDS]
    assert main(["judge", path, option, bad, *lexicon]) == 2
    assert message in capsys.readouterr().err


def test_a_submission_can_come_from_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", SimpleNamespace(buffer=io.BytesIO(b"0 0 4 0 cyber\n")))
    assert main(["judge", "--json", "-", "--lexicon", WORDS]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["file"], report["total"]) == ("-", 22)
