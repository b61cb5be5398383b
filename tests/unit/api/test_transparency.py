"""The transparency log through the API: each accepted upload and each verdict entering the
standings is an entry, committed with its fact; checkpoints are signed and served with tiles
and bundles; a team gets inclusion proofs; `tilejudge audit`'s checks pass on an honest log
and name what was changed when a result row is edited, an entry dropped or history re-signed.
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete, select, update

from api.public import SharedReads
from cli.audit import SEALED_HEADER, Audit, audit, check_uploads, sealed_leaf
from core import transparency
from core.tlog import Verifier, check_record, leaf_hash, open_checkpoint, root, tiles
from devstack.testing.pipeline import ADMIN, Pipeline, TeamLogin, drain
from infra.sql.schema import log_entries, log_hashes, log_heads, logs, results

ALPHA = b"0 0 0 2 cat\n"  # 7 with the tiny list and the 2026 layout
BETA = b"-1 0 1 0 cab\n0 0 0 2 tab\n"
GAMMA = b"0 0 2 0 tea\n"


def sequence(pipe: Pipeline) -> None:
    signer = pipe.services.log_signer
    assert signer is not None
    pipe.store.sequence(signer.sign)


def get(pipe: Pipeline) -> Any:
    def fetch(path: str) -> tuple[int, bytes, int | None]:
        answer = pipe.client.get(path)
        assert answer.status_code in (200, 403), (path, answer.status_code, answer.text)
        return answer.status_code, answer.content, sealed_leaf(answer.headers.get(SEALED_HEADER))

    return fetch


def run_audit(pipe: Pipeline, seen: Path | None = None, contest: str = "open") -> Audit:
    key = pipe.client.get(f"/v1/contests/{contest}/log/key").text.strip()
    return audit(get(pipe), contest, key=key, seen_dir=seen, err=io.StringIO(), settle=0)


def judged_contest(pipe: Pipeline) -> tuple[TeamLogin, TeamLogin, list[str]]:
    ravens, owls = pipe.add_team("ravens"), pipe.add_team("owls")
    ids = [
        pipe.accepted(ravens, ALPHA)["id"],
        pipe.accepted(owls, BETA)["id"],
        pipe.accepted(owls, GAMMA)["id"],
    ]
    drain(pipe.services)
    sequence(pipe)
    return ravens, owls, ids


def entries(pipe: Pipeline, contest: str = "open") -> list[dict[str, Any]]:
    with pipe.store.read() as conn:
        rows = conn.execute(
            select(log_entries.c.entry)
            .where(log_entries.c.contest_id == contest)
            .order_by(log_entries.c.leaf)
        ).scalars()
        return [transparency.decode(bytes(row)) for row in rows]


def test_each_upload_and_verdict_is_an_entry_in_commit_order_under_a_signed_checkpoint(
    pipe: Pipeline,
) -> None:
    ravens, _, ids = judged_contest(pipe)
    logged = entries(pipe)
    again = pipe.upload(ravens, b"0 0 0 2 tab\n")
    assert again.json()["log_leaf"] == len(logged)  # the receipt names the upload's leaf
    assert [(e["type"], e["submission"]) for e in logged[:3]] == [("upload", i) for i in ids]
    verdicts = {e["submission"]: e for e in logged if e["type"] == "verdict"}
    assert set(verdicts) == set(ids)
    assert verdicts[ids[0]]["result"] == {"score": 7, "legal": 1, "illegal": 0, "tiles": 3}
    upload = logged[0]
    assert upload["team"] == ravens.id and upload["size"] == len(ALPHA)
    assert "cat" not in json.dumps(logged)  # no upload content

    key = pipe.client.get("/v1/contests/open/log/key").text.strip()
    signed = pipe.client.get("/v1/contests/open/log/checkpoint").text
    checkpoint = open_checkpoint(
        signed, [Verifier.from_key(key)], f"{key.split('+')[0]}/contests/open"
    )
    assert checkpoint.size == len(logged) == 6
    bundle = pipe.client.get(f"/v1/contests/open/log/{tiles.entries_path(0, 6)}")
    assert bundle.status_code == 200
    assert "immutable" in bundle.headers["cache-control"]
    served = tiles.decode_bundle(bundle.content, 6)
    assert root([leaf_hash(e) for e in served]) == checkpoint.root
    tile = pipe.client.get(f"/v1/contests/open/log/{tiles.tile_path(tiles.Tile(0, 0, 6))}")
    assert tile.content == b"".join(leaf_hash(e) for e in served)


def test_a_team_gets_inclusion_proofs_of_its_own_entries_against_the_checkpoint(
    pipe: Pipeline,
) -> None:
    ravens, _, ids = judged_contest(pipe)
    answer = pipe.client.get(f"/v1/submissions/{ids[0]}/log", headers=ravens.headers)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert [leaf["type"] for leaf in body["leaves"]] == ["upload", "verdict"]
    served = tiles.decode_bundle(
        pipe.client.get(f"/v1/contests/open/log/{tiles.entries_path(0, body['size'])}").content
    )
    checkpoint_root = root([leaf_hash(e) for e in served])
    for leaf in body["leaves"]:
        proof = [base64.b64decode(h) for h in leaf["proof"]]
        check_record(
            proof, body["size"], checkpoint_root, leaf["leaf"], leaf_hash(served[leaf["leaf"]])
        )
    other = pipe.client.get(f"/v1/submissions/{ids[1]}/log", headers=ravens.headers)
    assert other.status_code == 404
    shown = pipe.client.get(f"/v1/submissions/{ids[0]}", headers=ravens.headers).json()
    assert shown["log_leaf"] == body["leaves"][-1]["leaf"]  # its verdict's leaf


def test_an_honest_log_passes_every_check_of_the_audit(pipe: Pipeline, tmp_path: Path) -> None:
    judged_contest(pipe)
    found = run_audit(pipe, tmp_path)
    assert found.problems == []
    assert any("standings served match" in line for line in found.passed)
    pipe.accepted(pipe.teams["ravens"], b"0 0 0 3 tab\n")
    drain(pipe.services)
    sequence(pipe)
    again = run_audit(pipe, tmp_path)
    assert again.problems == [] and any(
        "consistent with the checkpoint of 6" in p for p in again.passed
    )


def test_a_result_row_edited_in_sql_is_caught_by_the_standings_check(pipe: Pipeline) -> None:
    _, _, ids = judged_contest(pipe)
    with pipe.store.engine.begin() as conn:
        conn.execute(update(results).where(results.c.submission_id == ids[1]).values(score=99))
    found = run_audit(pipe)
    assert any("standings served differ" in problem for problem in found.problems), found


def rebuild_log(pipe: Pipeline, keep: Any) -> None:
    """What an operator rewriting history does: the entries `keep` lets through, renumbered,
    hashed and signed again with the deployment's key."""
    kept = [e for e in entries(pipe) if keep(e)]
    with pipe.store.engine.begin() as conn:
        for table in (log_entries, log_hashes, logs, log_heads):
            conn.execute(delete(table).where(table.c.contest_id == "open"))
        conn.execute(
            log_heads.insert().values(contest_id="open", next_leaf=len(kept), closed=False)
        )
        for leaf, entry in enumerate(kept):
            conn.execute(
                log_entries.insert().values(
                    contest_id="open",
                    leaf=leaf,
                    entry=transparency.encode({k: v for k, v in entry.items() if k != "v"}),
                    sealed=False,
                    submission_id=entry.get("submission"),
                )
            )
    sequence(pipe)
    pipe.services.public = SharedReads()  # served afresh, as by an API restarted after it


def test_a_dropped_upload_entry_re_signed_is_caught_as_rewritten_history(
    pipe: Pipeline, tmp_path: Path
) -> None:
    _, _, ids = judged_contest(pipe)
    assert run_audit(pipe, tmp_path).problems == []
    rebuild_log(pipe, lambda e: not (e["type"] == "upload" and e["submission"] == ids[2]))
    found = run_audit(pipe, tmp_path)
    assert any("history was rewritten" in problem for problem in found.problems), found
    fresh = run_audit(pipe, None)  # a client that never saw the log before
    assert any("never logged as uploaded" in problem for problem in fresh.problems), fresh


def test_a_different_tree_of_the_same_size_re_signed_is_caught(
    pipe: Pipeline, tmp_path: Path
) -> None:
    judged_contest(pipe)
    assert run_audit(pipe, tmp_path).problems == []
    originals = entries(pipe)

    def lowered(entry: dict[str, Any]) -> bool:
        if entry["type"] == "verdict":
            entry["result"] = {**entry["result"], "score": 0}
        return True

    rebuild_log(pipe, lowered)
    assert len(entries(pipe)) == len(originals)
    found = run_audit(pipe, tmp_path)
    assert any("no longer hash to the root" in problem for problem in found.problems), found


def test_an_edited_entry_served_under_the_old_checkpoint_fails_the_root(pipe: Pipeline) -> None:
    judged_contest(pipe)
    with pipe.store.engine.begin() as conn:
        conn.execute(
            update(log_entries)
            .where(log_entries.c.leaf == 0)
            .values(entry=b'{"type":"upload","v":1}')
        )
    found = run_audit(pipe)
    assert any("do not hash to the signed root" in problem for problem in found.problems), found


def test_a_key_other_than_the_logs_is_refused(pipe: Pipeline) -> None:
    from core.tlog import generate_key

    judged_contest(pipe)
    _, other = generate_key("tilejudge.localhost")
    found = audit(get(pipe), "open", key=other, seen_dir=None, err=io.StringIO())
    assert found.problems and "does not verify" in found.problems[0]


def test_an_applied_rejudge_logs_its_run_and_a_verdict_for_each_result_it_changed(
    pipe: Pipeline, tmp_path: Path
) -> None:
    from tests.unit.api.test_rejudge import run_rejudge_work

    judged_contest(pipe)
    response = pipe.client.post(
        "/v1/lexicons",
        params={"name": "fixed"},
        content=b"cat\nat\nate\ntea\neat\ntab\nbat\ncab\nby\n"[:-8] + b"\n",  # no "cab", "by"
        headers={**ADMIN, "Content-Type": "text/plain"},
    )
    assert response.status_code == 201, response.text
    run = pipe.client.post(
        "/v1/contests/open/rejudges", json={"lexicon": "fixed", "mode": "full"}, headers=ADMIN
    ).json()
    run_rejudge_work(pipe)
    assert pipe.client.post(f"/v1/rejudges/{run['id']}/apply", headers=ADMIN).status_code == 200
    sequence(pipe)
    logged = entries(pipe)
    rejudge = [e for e in logged if e["type"] == "rejudge"]
    changed = [e for e in logged if e.get("rejudge") == run["id"] and e["type"] == "verdict"]
    assert len(rejudge) == 1 and rejudge[0]["run"] == run["id"]
    assert [e["submission"] for e in changed] and all(
        e["lexicon"] == rejudge[0]["lexicon"] for e in changed
    )
    assert len(changed) < 3  # only the results the fix changed
    assert run_audit(pipe, tmp_path).problems == []


def test_a_teams_own_files_judge_offline_to_their_logged_verdicts(
    pipe: Pipeline, tmp_path: Path
) -> None:
    judged_contest(pipe)
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "alpha.txt").write_bytes(ALPHA)
    (folder / "never-sent.txt").write_bytes(b"0 0 0 2 at\n")
    lexicon = tmp_path / "tiny.txt"
    lexicon.write_text(
        "".join(w + "\n" for w in ("cat", "at", "ate", "tea", "eat", "tab", "bat", "cab", "by"))
    )
    found = run_audit(pipe)
    check_uploads(found, folder, str(lexicon), None, {})
    assert any("alpha.txt" in line and "logged verdict" in line for line in found.passed), found
    assert found.problems == ["never-sent.txt is not in the log (no upload with its SHA-256)"]


@pytest.mark.parametrize("kind", ["team_deleted", "close"])
def test_deleting_a_team_and_closing_are_logged_and_the_audit_still_passes(
    pipe: Pipeline, kind: str
) -> None:
    _, owls, _ = judged_contest(pipe)
    if kind == "team_deleted":
        assert pipe.client.delete(f"/v1/teams/{owls.id}", headers=ADMIN).status_code in (200, 204)
    else:
        assert pipe.client.post("/v1/contests/open/close", headers=ADMIN).status_code == 200
    sequence(pipe)
    assert entries(pipe)[-1]["type"] == kind
    assert run_audit(pipe).problems == []


def test_a_frozen_verdict_is_logged_sealed_until_the_thaw_and_its_team_still_gets_the_proof(
    pipe: Pipeline, shifted: Any
) -> None:
    from tests.unit.api.test_freeze import CONTEST, TAB, frozen_contest, past_the_freeze

    frozen_contest(pipe)
    ravens = pipe.add_team("ravens", contest=CONTEST)
    before = pipe.accepted(ravens, b"0 0 2 0 cat\n")["id"]
    drain(pipe.services)
    past_the_freeze(shifted)
    after = pipe.accepted(ravens, TAB)["id"]
    drain(pipe.services)
    sequence(pipe)
    size = len(entries(pipe, CONTEST))
    path = f"/v1/contests/{CONTEST}/log/{tiles.entries_path(0, size)}"
    assert pipe.client.get(path).status_code == 403
    organiser = pipe.client.get(path, headers=ADMIN)
    assert organiser.status_code == 200 and "no-store" in organiser.headers["cache-control"]
    leaf_tile = pipe.client.get(
        f"/v1/contests/{CONTEST}/log/{tiles.tile_path(tiles.Tile(0, 0, size))}"
    )
    assert leaf_tile.status_code == 200  # the hashes commit to the sealed verdict

    found = run_audit(pipe, contest=CONTEST)
    assert found.problems == [] and found.withheld == size - 3, found  # all but the first 3
    own = pipe.client.get(f"/v1/submissions/{after}/log", headers=ravens.headers).json()
    assert [leaf["type"] for leaf in own["leaves"]] == ["upload", "verdict"]
    assert all(leaf["proof"] is not None for leaf in own["leaves"])

    assert pipe.client.post(f"/v1/contests/{CONTEST}/thaw", headers=ADMIN).status_code == 200
    assert pipe.client.get(path).status_code == 200
    thawed = run_audit(pipe, contest=CONTEST)
    assert thawed.problems == [] and thawed.withheld == 0, thawed
    verdicts = {e["submission"]: e for e in entries(pipe, CONTEST) if e["type"] == "verdict"}
    # The sealed verdict's leaf hash, public all along, hid its few possible scores.
    assert "nonce" in verdicts[after] and "nonce" not in verdicts[before]


@pytest.fixture
def shifted(monkeypatch: pytest.MonkeyPatch) -> Any:
    from core import clock
    from tests.unit.api.test_freeze import Shifted

    moved = Shifted()
    monkeypatch.setattr(clock, "now", moved)
    return moved


def test_standings_ahead_of_the_checkpoint_are_compared_again_with_a_newer_one(
    pipe: Pipeline,
) -> None:
    """While results come in, the standings may hold a verdict the checkpoint is too old for:
    the audit waits for a newer checkpoint instead of crying wolf."""
    ravens, _, _ = judged_contest(pipe)
    pipe.accepted(ravens, b"0 0 2 0 bat\n0 1 0 2 at\n")
    drain(pipe.services)  # judged, not yet sequenced: the leaderboard is ahead of the log
    sleeps: list[float] = []

    def sequence_meanwhile(seconds: float) -> None:
        sleeps.append(seconds)
        sequence(pipe)

    key = pipe.client.get("/v1/contests/open/log/key").text.strip()
    found = audit(
        get(pipe),
        "open",
        key=key,
        seen_dir=None,
        err=io.StringIO(),
        settle=5,
        sleep=sequence_meanwhile,
    )
    assert found.problems == [] and sleeps == [1.0], found


def test_the_audit_refuses_entries_withheld_from_a_contest_that_is_not_frozen(
    pipe: Pipeline,
) -> None:
    """A server hiding an entry behind a 403 while its contest is open is caught, and one
    that names no sealed leaf in the bundle (or one outside it) too."""
    judged_contest(pipe)
    honest = get(pipe)

    def hiding(header: int | None) -> Any:
        def fetch(path: str) -> tuple[int, bytes, int | None]:
            if "/tile/entries/" in path and not path.endswith(".p/2"):
                return 403, b"", header
            return honest(path)

        return fetch

    key = pipe.client.get("/v1/contests/open/log/key").text.strip()
    hidden = audit(hiding(2), "open", key=key, seen_dir=None, err=io.StringIO(), settle=0)
    assert hidden.withheld == 4
    assert hidden.problems == ["4 entries are withheld, but the contest says it is not frozen"]
    for header in (None, 300):
        found = audit(hiding(header), "open", key=key, seen_dir=None, err=io.StringIO(), settle=0)
        assert "without naming a sealed leaf" in found.problems[0], found


def test_a_key_changed_since_the_last_audit_is_named(pipe: Pipeline, tmp_path: Path) -> None:
    from core.log_signing import LogSigner
    from core.tlog import generate_key

    judged_contest(pipe)
    assert run_audit(pipe, tmp_path).problems == []
    pipe.services.log_signer = LogSigner(generate_key("tilejudge.localhost")[0])
    with pipe.store.engine.begin() as conn:
        for table in (logs, log_hashes):  # signed again from scratch with the new key
            conn.execute(delete(table))
    sequence(pipe)
    pipe.services.public = SharedReads()
    found = run_audit(pipe, tmp_path)
    assert found.problems and "the log's key changed" in found.problems[0], found
