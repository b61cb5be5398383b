"""The proof after a run: every acknowledged upload judged exactly once with the offline
judge's score, the transparency log whole and served alike by every API host; and the one line
of figures a run prints."""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Sequence

import httpx

from devstack.testing.cluster.cluster import Cluster
from devstack.testing.cluster.corpora import Corpus
from devstack.testing.cluster.uploads import Sent
from devstack.testing.log_checks import entry_problems


def judged_once_problems(
    cluster: Cluster, contest: str, sent: Sequence[Sent], corpus: Corpus
) -> list[str]:
    """What is wrong, one line each: every acknowledged upload, and every other submission the
    contest holds, must be judged, with exactly one result under the live ruleset and exactly
    one `submission.judged` event, both with the offline judge's score; and no two uploads may
    share a submission."""
    rows = cluster.sql(
        "SELECT s.id, s.sha256, s.state, s.attempts, s.failure, "
        "(SELECT COUNT(*) FROM results r WHERE r.submission_id = s.id "
        " AND r.lexicon_id = c.lexicon_id AND r.layout_id = c.layout_id), "
        "(SELECT MIN(r.score) FROM results r WHERE r.submission_id = s.id "
        " AND r.lexicon_id = c.lexicon_id AND r.layout_id = c.layout_id) "
        "FROM submissions s JOIN contests c ON c.id = s.contest_id WHERE s.contest_id = %s",
        contest,
    )
    events: dict[str, list[int]] = {}
    for sid, data in cluster.sql(
        "SELECT submission_id, data FROM events WHERE type = 'submission.judged' "
        "AND contest_id = %s ORDER BY id",
        contest,
    ):
        events.setdefault(str(sid), []).append(int(json.loads(data)["score"]))
    by_sha: dict[str, set[int]] = {}
    for n, data in enumerate(corpus.data):
        by_sha.setdefault(hashlib.sha256(data).hexdigest(), set()).add(corpus.expected[n])
    problems = []
    stored = {}
    for sid, sha, state, attempts, failure, results, score in rows:
        stored[str(sid)] = state
        wanted = by_sha.get(sha)
        if wanted is None:
            problems.append(f"submission {sid}: bytes that are not in the corpus")
            continue
        if state != "judged":
            problems.append(f"submission {sid} is {state} after {attempts} attempts: {failure}")
        if results != 1 or score not in wanted:
            problems.append(
                f"submission {sid}: {results} results under the live ruleset, score {score}, "
                f"offline judge {sorted(wanted)}"
            )
        scores = events.get(str(sid), [])
        if len(scores) != 1 or scores[0] not in wanted:
            problems.append(
                f"submission {sid}: submission.judged events with scores {scores}, offline "
                f"judge {sorted(wanted)}"
            )
    owners: dict[str, list[int]] = {}
    for one in sent:
        if not one.acknowledged:
            continue
        assert one.submission is not None
        owners.setdefault(one.submission, []).append(one.index)
        if one.submission not in stored:
            problems.append(f"upload {one.index} was acknowledged as {one.submission}, not stored")
    problems += [
        f"uploads {indexes} got one submission {sid}"
        for sid, indexes in owners.items()
        if len(indexes) > 1
    ]
    return problems


def log_problems(cluster: Cluster, contest: str, settle_s: float = 15.0) -> list[str]:
    """What is wrong with the contest's transparency log, one line each: its leaves must be
    numbered without gap or repeat, hold one upload entry and one verdict entry for each
    submission (with the result's score), and every live API host must serve the same signed
    checkpoint and the same bundles, whose entries hash to its root."""
    from core.tlog import bundles_for, decode_bundle, leaf_hash, root, tile_path

    rows = cluster.sql(
        "SELECT leaf, entry FROM log_entries WHERE contest_id = %s ORDER BY leaf", contest
    )
    problems = entry_problems(
        rows,
        cluster.sql(
            "SELECT r.submission_id, r.score FROM results r JOIN submissions s ON "
            "s.id = r.submission_id JOIN contests c ON c.id = s.contest_id WHERE s.contest_id = "
            "%s AND r.lexicon_id = c.lexicon_id AND r.layout_id = c.layout_id",
            contest,
        ),
    )
    served = {}
    deadline = time.monotonic() + settle_s
    live = [n for n in cluster.apis if "api" in cluster.apis[n].processes and cluster.api_ready(n)]
    for name in live:
        base = f"{cluster.api_url(name)}/v1/contests/{contest}/log"
        while True:
            checkpoint = httpx.get(f"{base}/checkpoint", timeout=10).text
            size = int(checkpoint.split("\n")[1])
            if size == len(rows) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        bundles = [
            httpx.get(f"{base}/{tile_path(b)}", timeout=10).content for b in bundles_for(size)
        ]
        entries = [
            e for b, data in zip(bundles_for(size), bundles) for e in decode_bundle(data, b.width)
        ]
        served[name] = (checkpoint, entries)
        if size != len(rows):
            problems.append(
                f"{name} serves a checkpoint of {size} entries, the log holds {len(rows)}"
            )
        signed_root = base64.b64decode(checkpoint.split("\n")[2])
        if root([leaf_hash(e) for e in entries]) != signed_root:
            problems.append(f"{name} serves bundles that do not hash to its checkpoint's root")
    if len({(c, tuple(e)) for c, e in served.values()}) > 1:
        problems.append(f"the API hosts {sorted(served)} serve different logs")
    if not live:
        problems.append("no API host answers to serve the log")
    return problems


def one_line(**figures: object) -> str:
    return ", ".join(
        f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in figures.items()
    )
