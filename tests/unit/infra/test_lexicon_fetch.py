"""`tilejudge lexicon fetch`: each known list from the first place that has it, checked by digest;
one sentence for a list no place could supply; the Crosstiles recipe over its sources."""

from __future__ import annotations

import hashlib
import http.server
import io
import shutil
import socket
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.main import main
from devstack.testing.word_lists import cached_list
from infra import lexicon_files, lexicon_sources
from infra.lexicon_sources import KNOWN_LISTS, SourceUnavailable


def offline(url: str) -> bytes:
    raise SourceUnavailable(f"downloading {url} failed (Name or service not known)")


@pytest.fixture(autouse=True)
def nothing_beside_the_project(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests decide every place a list may come from: not a development copy of the lists
    that may sit beside the checkout (`lexicon_files.beside_project`)."""
    monkeypatch.setattr(lexicon_files, "beside_project", lambda: None)


@pytest.fixture
def source(tmp_path: Path) -> Path:
    folder = tmp_path / "lists"
    folder.mkdir()
    for known in KNOWN_LISTS:
        shutil.copy(cached_list(known.file), folder / known.file)
    return folder


def test_every_list_is_copied_from_the_source_folder_when_upstream_is_out_of_reach(
    tmp_path: Path, source: Path
) -> None:
    fetched, missing = lexicon_files.fetch(tmp_path / "cache", source, offline)
    assert missing == []
    assert [(f.path.name, f.origin) for f in fetched] == [
        (known.file, str(source)) for known in KNOWN_LISTS
    ]
    for known in KNOWN_LISTS:
        data = (tmp_path / "cache" / known.file).read_bytes()
        assert hashlib.sha256(data).hexdigest() == known.sha256


def test_a_list_already_in_the_cache_is_kept_without_asking_anywhere(
    tmp_path: Path, source: Path
) -> None:
    lexicon_files.fetch(tmp_path / "cache", source, offline)
    fetched, missing = lexicon_files.fetch(tmp_path / "cache", None, offline)
    assert missing == []
    assert {f.origin for f in fetched} == {"cache"}


def test_a_source_file_with_another_digest_is_refused_and_named(
    tmp_path: Path, source: Path
) -> None:
    spoilt = source / "words_alpha.txt"
    spoilt.write_bytes(spoilt.read_bytes() + b"zzzzzz\n")
    fetched, missing = lexicon_files.fetch(tmp_path / "cache", source, offline)
    assert [lost.known.file for lost in missing] == ["words_alpha.txt"]
    assert len(fetched) == len(KNOWN_LISTS) - 1
    assert not (tmp_path / "cache" / "words_alpha.txt").exists()
    sentence = missing[0].sentence()
    assert f"{spoilt} has sha256" in sentence
    assert "not the pinned one" in sentence


def test_lexicon_fetch_with_no_source_names_each_missing_list_in_one_sentence_and_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(lexicon_sources, "download", offline)
    monkeypatch.setattr(lexicon_sources, "SCOWL_PACKAGE_DIR", tmp_path / "no-scowl")
    environ = {"HOME": str(tmp_path), "TILEJUDGE_LEXICON_CACHE": str(tmp_path / "cache")}

    assert main(["lexicon", "fetch"], environ) == 1

    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert [line.split()[1] for line in lines] == [known.file for known in KNOWN_LISTS]
    for line in lines:
        assert "Traceback" not in line
        assert "downloading https://" in line
        assert "Name or service not known" in line
        assert "set TILEJUDGE_LEXICON_SOURCE to that folder" in line


def test_lexicon_fetch_takes_the_folder_the_environment_names(
    tmp_path: Path,
    source: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(lexicon_sources, "download", offline)
    cache = tmp_path / "cache"
    environ = {
        "HOME": str(tmp_path),
        "TILEJUDGE_LEXICON_CACHE": str(cache),
        "TILEJUDGE_LEXICON_SOURCE": str(source),
    }
    assert main(["lexicon", "fetch"], environ) == 0
    assert capsys.readouterr().out.split() == [str(cache / k.file) for k in KNOWN_LISTS]


def test_a_wordytaire_list_downloaded_in_upstreams_crlf_form_is_stored_with_lf(
    tmp_path: Path,
) -> None:
    lf = cached_list("words_alpha_2020-08-24.txt").read_bytes()
    upstream_form = lf.replace(b"\n", b"\r\n").removesuffix(b"\r\n")  # no final line ending
    asked: list[str] = []

    def upstream(url: str) -> bytes:
        asked.append(url)
        if "7cb484da5de560c11109c8f3925565966015e5a9" in url:
            return upstream_form
        return offline(url)

    fetched, _ = lexicon_files.fetch(tmp_path / "cache", None, upstream)
    assert [(f.path.name, f.origin) for f in fetched] == [
        ("words_alpha_2020-08-24.txt", "upstream")
    ]
    assert (tmp_path / "cache" / "words_alpha_2020-08-24.txt").read_bytes() == lf
    # ENABLE feeds two lists and is asked for once, though it failed.
    assert sum("enable1.txt" in url for url in asked) == 1


def test_a_download_that_answers_the_wrong_list_is_not_cached(tmp_path: Path) -> None:
    fetched, missing = lexicon_files.fetch(tmp_path / "cache", None, lambda url: b"cat\ndog\n")
    assert fetched == []
    assert "not the pinned one" in missing[0].sentence()
    assert list((tmp_path / "cache").iterdir()) == []


def scowl_archive(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in files.items():
            member = tarfile.TarInfo(name)
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
    return out.getvalue()


def test_the_crosstiles_recipe_adds_plain_british_words_of_two_to_sixteen_letters() -> None:
    enable = b"aa\nzebra\na\nabcdefghijklmnopq\ncolor\r\n"
    archive = scowl_archive(
        {
            "scowl-2020.12.07/final/british-words.10": b"colour\nLondon\nisn't\ncolor\n",
            "scowl-2020.12.07/final/british_z-words.80": b"organize\xe9\nrealize\n",
            "scowl-2020.12.07/final/british-words.95": b"rareword\n",  # size 95: left out
            "scowl-2020.12.07/final/american-words.10": b"favor\n",  # not a British list
            "scowl-2020.12.07/misc/british-words.10": b"outside\n",  # not in final/
            "scowl-2020.12.07/final/british_variant_1-words.35": b"x\nabcdefghijklmnopq\n",
        }
    )
    lists = lexicon_sources.scowl_from_archive(archive)
    built = lexicon_sources.crosstiles_words(enable, lists)
    assert built == b"aa\ncolor\ncolour\nrealize\nzebra\n"


def test_the_scowl_package_folder_is_read_like_the_archives_final_lists(tmp_path: Path) -> None:
    (tmp_path / "british-words.10").write_bytes(b"colour\n")
    (tmp_path / "british-words.95").write_bytes(b"rareword\n")
    (tmp_path / "american-words.10").write_bytes(b"color\n")
    assert lexicon_sources.scowl_from_folder(tmp_path) == [b"colour\n"]
    assert lexicon_sources.scowl_from_folder(tmp_path / "absent") is None


def test_an_archive_that_is_not_one_is_a_source_unavailable() -> None:
    with pytest.raises(SourceUnavailable, match="could not be read"):
        lexicon_sources.scowl_from_archive(b"<html>moved</html>")
    with pytest.raises(SourceUnavailable, match="none of the final lists"):
        lexicon_sources.scowl_from_archive(scowl_archive({"README": b"hello"}))


@pytest.fixture
def local_server() -> Iterator[str]:
    body = b"x" * 100

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/list.txt"
    finally:
        server.shutdown()
        server.server_close()


def test_a_download_is_read_up_to_its_bound(
    local_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert lexicon_sources.download(local_server) == b"x" * 100
    monkeypatch.setattr(lexicon_sources, "MAX_DOWNLOAD_BYTES", 99)
    with pytest.raises(SourceUnavailable, match="larger than 99 bytes"):
        lexicon_sources.download(local_server)


def test_a_refused_connection_is_a_source_unavailable_naming_the_url() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/list.txt"
    with pytest.raises(SourceUnavailable, match=f"downloading {url} failed"):
        lexicon_sources.download(url)
