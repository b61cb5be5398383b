"""A contest's log as the API serves it, checked by Go's own sumdb packages: every C2SP file
the API answers (checkpoint, hash tiles, entry bundles) mirrored into a folder, then go_tlog
opens the checkpoint with the verifier key the API publishes, rebuilds the signed root from
the tiles and from the bundles, proves every record, and checks the inclusion proofs a team
is handed by `GET /v1/submissions/{id}/log`."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

from core.tlog import bundles_for, leaf_hash, tile_path, tiles_for
from core.tlog.tiles import decode_bundle
from devstack.testing.pipeline import ADMIN, Pipeline, drain, open_pipeline
from tests.crosscheck.test_go_tlog import go_tlog  # noqa: F401  (the built program)
from tests.unit.api.test_transparency import sequence

CONTEST = "open"


def mirror(pipe: Pipeline, folder: Path) -> int:
    """Every file of the contest's log, as served, into the folder; the tree's size."""
    base = f"/v1/contests/{CONTEST}/log"
    checkpoint = pipe.client.get(f"{base}/checkpoint")
    assert checkpoint.status_code == 200
    size = int(checkpoint.text.split("\n")[1])
    files = {"checkpoint": checkpoint.content}
    for tile in [*tiles_for(size), *bundles_for(size)]:
        answer = pipe.client.get(f"{base}/{tile_path(tile)}")
        assert answer.status_code == 200, (tile_path(tile), answer.text)
        files[tile_path(tile)] = answer.content
    for path, data in files.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_bytes(data)
    return size


def served_proofs(pipe: Pipeline, folder: Path, submissions: list[str], size: int) -> Path:
    """The inclusion proofs the API hands a submission's team, as go_tlog's -proofs reads."""
    entries: list[bytes] = []
    for bundle in bundles_for(size):
        entries += decode_bundle((folder / tile_path(bundle)).read_bytes(), bundle.width)
    records: list[dict[str, Any]] = []
    for sid in submissions:
        body = pipe.client.get(f"/v1/submissions/{sid}/log", headers=ADMIN).json()
        assert body["size"] == size
        records += [
            {
                "index": leaf["leaf"],
                "leaf_hash": leaf_hash(entries[leaf["leaf"]]).hex(),
                "proof": [base64.b64decode(h).hex() for h in leaf["proof"]],
            }
            for leaf in body["leaves"]
        ]
    path = folder.parent / "proofs.json"
    path.write_text(json.dumps({"records": records, "trees": []}))
    return path


def test_go_verifies_a_contests_log_as_the_api_serves_it(go_tlog: Path, tmp_path: Path) -> None:  # noqa: F811
    (tmp_path / "pipe").mkdir()
    with open_pipeline(tmp_path / "pipe") as pipe:
        pipe.add_contest(CONTEST)
        teams = [pipe.add_team(f"team-{n}") for n in range(3)]
        ids = [
            pipe.accepted(teams[n % 3], f"0 0 0 2 cat\n{n} 5 {n} 6 at\n".encode())["id"]
            for n in range(140)
        ]
        drain(pipe.services)
        sequence(pipe)
        folder = tmp_path / "log"
        size = mirror(pipe, folder)
        assert size == 280  # a full tile and a partial one at level 0
        key = pipe.client.get(f"/v1/contests/{CONTEST}/log/key").text.strip()
        proofs = served_proofs(pipe, folder, [ids[0], ids[130]], size)
        origin = f"{key.split('+')[0]}/contests/{CONTEST}"
    ran = subprocess.run(
        [str(go_tlog), "-origin", origin, "-proofs", str(proofs), str(folder), key],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    result = json.loads(ran.stdout.strip().splitlines()[-1])
    assert ran.returncode == 0 and result["ok"], (result, ran.stderr)
    assert result["records_proved"] == size
