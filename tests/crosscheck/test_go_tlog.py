"""Go's own transparency-log packages (golang.org/x/mod/sumdb/note and .../sumdb/tlog, through
go_tlog/main.go) verify what core.tlog writes: the signed checkpoint, the tree recomputed from
the C2SP tiles, every entry bundle, and inclusion and consistency proofs made in Python. Forged
files make Go fail too, so the check can fail. Skips only where Go or x/mod is missing."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from core.tlog import (
    EMPTY_ROOT,
    Checkpoint,
    InMemoryTree,
    Signer,
    bundles_for,
    encode_bundle,
    generate_key,
    leaf_hash,
    prove_record,
    prove_tree,
    read_tile_data,
    sign_checkpoint,
    tile_path,
    tiles_for,
    tree_hash,
)

GO_PATH = Path("/usr/share/gocode")  # Debian's golang-golang-x-mod-dev installs here
X_MOD = GO_PATH / "src/golang.org/x/mod/sumdb"
PROGRAM = Path(__file__).parent / "go_tlog"
ORIGIN = "judge.example/contests/c1/log"


@pytest.fixture(scope="session")
def go_tlog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Go verifier, built once per session without modules from Debian's x/mod sources."""
    go = shutil.which("go")
    if go is None:
        pytest.skip("Go is not installed (`make go-tools` installs golang-go)")
    if not (X_MOD / "tlog").is_dir() or not (X_MOD / "note").is_dir():
        pytest.skip(f"{X_MOD} is missing (`make go-tools` installs golang-golang-x-mod-dev)")
    work = tmp_path_factory.mktemp("go_tlog")
    env = {
        **os.environ,
        "GO111MODULE": "off",
        "GOPATH": f"{work / 'gopath'}:{GO_PATH}",
        "GOCACHE": str(work / "cache"),
        "GOFLAGS": "",
    }
    binary = work / "go_tlog"
    built = subprocess.run(
        [go, "build", "-o", str(binary), "."],
        cwd=PROGRAM,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if built.returncode != 0:
        pytest.fail(f"go build failed:\n{built.stderr}")
    return binary


@dataclass
class Log:
    directory: Path
    verifier_key: str
    tree: InMemoryTree
    entries: list[bytes]


def entries(size: int) -> list[bytes]:
    """Entries of assorted lengths: empty, short, and longer than 255 bytes."""
    return [f"record {i};".encode() * (i % 40) for i in range(size)]


def write_log(directory: Path, log_entries: list[bytes]) -> Log:
    """A log of the entries as its C2SP files (hash tiles, entry bundles, checkpoint) signed
    by a new key."""
    signer_key, verifier_key = generate_key(ORIGIN)
    tree = InMemoryTree()
    for entry in log_entries:
        tree.append(entry)
    size = len(log_entries)
    files = {tile_path(t): read_tile_data(t, tree.read_hashes) for t in tiles_for(size)}
    for bundle in bundles_for(size):
        start = bundle.n * 256
        files[tile_path(bundle)] = encode_bundle(log_entries[start : start + bundle.width])
    checkpoint = Checkpoint(ORIGIN, size, tree.root())
    files["checkpoint"] = sign_checkpoint(checkpoint, Signer.from_key(signer_key)).encode()
    for path, data in files.items():
        (directory / path).parent.mkdir(parents=True, exist_ok=True)
        (directory / path).write_bytes(data)
    return Log(directory, verifier_key, tree, log_entries)


def python_proofs(log: Log) -> dict[str, Any]:
    """Inclusion proofs of a few records and consistency proofs from a few older sizes, as the
    JSON go_tlog's -proofs flag reads."""
    size = log.tree.size
    records = sorted({0, size // 2, size - 1})
    old_sizes = sorted({1, max(1, size // 3), max(1, size - 1), size})
    return {
        "records": [
            {
                "index": i,
                "leaf_hash": leaf_hash(log.entries[i]).hex(),
                "proof": [h.hex() for h in prove_record(size, i, log.tree.read_hashes)],
            }
            for i in records
        ],
        "trees": [
            {
                "old_size": old,
                "old_root": tree_hash(old, log.tree.read_hashes).hex(),
                "proof": [h.hex() for h in prove_tree(size, old, log.tree.read_hashes)],
            }
            for old in old_sizes
        ],
    }


def run_go(
    binary: Path, source: str, log: Log, *indexes: int, proofs: Path | None = None
) -> tuple[int, dict[str, Any], str]:
    """go_tlog's exit status, its JSON line and its standard error."""
    flags = ["-proofs", str(proofs)] if proofs else []
    ran = subprocess.run(
        [str(binary), "-origin", ORIGIN, *flags, source, log.verifier_key, *map(str, indexes)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = ran.stdout.strip().splitlines()
    assert lines, f"go_tlog printed nothing; stderr: {ran.stderr}"
    return ran.returncode, json.loads(lines[-1]), ran.stderr


def flip_byte(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("size", [1, 7, 256, 300, 1000])
def test_go_verifies_the_checkpoint_tiles_bundles_and_proofs_python_wrote(
    go_tlog: Path, tmp_path: Path, size: int
) -> None:
    log = write_log(tmp_path, entries(size))
    given = python_proofs(log)
    proofs = tmp_path / "proofs.json"
    proofs.write_text(json.dumps(given))
    status, result, stderr = run_go(go_tlog, str(tmp_path), log, proofs=proofs)
    assert status == 0, stderr
    assert result["ok"] is True
    assert result["origin"] == ORIGIN
    assert result["size"] == size
    assert result["root"] == base64.b64encode(log.tree.root()).decode()
    assert result["signers"] == ["+".join(log.verifier_key.split("+")[:2])]  # name+hash
    assert result["entries"] == size
    assert result["records_proved"] == size  # every record, from the tiles alone
    assert result["record_proofs_checked"] == len(given["records"])
    assert result["tree_proofs_checked"] == len(given["trees"])


def test_go_verifies_an_empty_log_with_rfc_6962s_empty_root(go_tlog: Path, tmp_path: Path) -> None:
    log = write_log(tmp_path, [])
    status, result, stderr = run_go(go_tlog, str(tmp_path), log)
    assert status == 0, stderr
    assert result["size"] == 0
    assert result["root"] == base64.b64encode(EMPTY_ROOT).decode()


def test_go_refuses_a_checkpoint_signed_by_another_key_of_the_same_name(
    go_tlog: Path, tmp_path: Path
) -> None:
    log = write_log(tmp_path, entries(7))
    _, other_key = generate_key(ORIGIN)
    impostor = Log(log.directory, other_key, log.tree, log.entries)
    status, result, _ = run_go(go_tlog, str(tmp_path), impostor)
    assert status == 1
    assert result["ok"] is False
    assert "opening the checkpoint note" in result["error"]


def test_go_refuses_a_checkpoint_from_another_origin(go_tlog: Path, tmp_path: Path) -> None:
    log = write_log(tmp_path, entries(7))
    ran = subprocess.run(
        [str(go_tlog), "-origin", "other.example/log", str(tmp_path), log.verifier_key],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 1
    assert "checkpoint origin" in json.loads(ran.stdout)["error"]


def test_go_catches_a_forged_hash_in_a_full_tile(go_tlog: Path, tmp_path: Path) -> None:
    log = write_log(tmp_path, entries(300))
    flip_byte(tmp_path / "tile/0/000", 5 * 32)
    status, result, _ = run_go(go_tlog, str(tmp_path), log)
    assert status == 1
    # Go's TileHashReader lets this tile through unchecked (see test_tlog_tiles); its proof
    # check catches the forgery.
    assert re.fullmatch(r"record \d+: invalid transparency proof", result["error"])


def test_go_catches_a_forged_partial_tile(go_tlog: Path, tmp_path: Path) -> None:
    log = write_log(tmp_path, entries(300))
    flip_byte(tmp_path / "tile/0/001.p/44", 0)
    status, result, _ = run_go(go_tlog, str(tmp_path), log)
    assert status == 1
    assert "tree hash from the tiles: downloaded inconsistent tile" in result["error"]


def test_go_catches_an_entry_bundle_that_does_not_hash_to_the_root(
    go_tlog: Path, tmp_path: Path
) -> None:
    log = write_log(tmp_path, entries(300))
    flip_byte(tmp_path / "tile/entries/001.p/44", 10)
    status, result, _ = run_go(go_tlog, str(tmp_path), log)
    assert status == 1
    assert "the entry bundles hash to" in result["error"]


def test_go_catches_a_tampered_python_proof(go_tlog: Path, tmp_path: Path) -> None:
    log = write_log(tmp_path, entries(300))
    proofs = python_proofs(log)
    proofs["records"][1]["proof"][2] = "00" * 32
    (tmp_path / "proofs.json").write_text(json.dumps(proofs))
    status, result, _ = run_go(go_tlog, str(tmp_path), log, proofs=tmp_path / "proofs.json")
    assert status == 1
    assert "given inclusion proof of record 150: invalid transparency proof" in result["error"]


@pytest.fixture
def served_directory(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """The directory tmp_path/log served over HTTP, and its base URL."""
    directory = tmp_path / "log"
    directory.mkdir()

    class QuietHandler(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(QuietHandler, directory=str(directory)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield directory, f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_go_verifies_a_log_served_over_http_and_names_a_missing_file(
    go_tlog: Path, served_directory: tuple[Path, str]
) -> None:
    directory, url = served_directory
    log = write_log(directory, entries(300))
    status, result, stderr = run_go(go_tlog, url, log, 0, 299)
    assert status == 0, stderr
    assert result["records_proved"] == 2
    (directory / "tile/0/000").unlink()
    status, result, _ = run_go(go_tlog, url, log)
    assert status == 1
    assert "tile/0/000: 404" in result["error"]
