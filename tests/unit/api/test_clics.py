"""The Contest API over the in-process pipeline: the scoreboard ranks as the leaderboard does,
who sees what (tokens, basic auth, the freeze), Crosstiles contests left out, errors in the
spec's shape, and the event feed: snapshot, since_token, and followers sharing one poller."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from api.clics_feed import FeedHub
from core import clock
from core.clics import Role, Viewer
from devstack.testing.pipeline import ADMIN, Pipeline, TeamLogin, drain

MOVES = (b"-1 0 1 0 cat\n", b"-1 0 1 0 tab\n0 0 0 2 tea\n", b"-1 0 1 0 bat\n", b"0 -1 0 1 eat\n")


def feed(pipe: Pipeline, query: str = "stream=false", **headers: str) -> list[dict[str, Any]]:
    response = pipe.client.get(f"/clics/contests/open/event-feed?{query}", headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/x-ndjson"
    return [json.loads(line) for line in response.text.splitlines() if line]


def test_the_scoreboard_ranks_as_the_leaderboard_does(pipe: Pipeline) -> None:
    teams = [pipe.add_team(f"team-{n}") for n in range(4)]
    for n, data in enumerate(MOVES * 2):
        pipe.accepted(teams[n % 3], data)
    drain(pipe.services)
    board = pipe.client.get("/clics/contests/open/scoreboard").json()
    leaderboard = pipe.client.get("/v1/contests/open/leaderboard").json()["entries"]
    names = {t.id: t.name for t in teams}
    ranked = [(r["rank"], names[r["team_id"]], r["score"]["score"]) for r in board["rows"]]
    assert ranked[:3] == [(e["rank"], e["team"], e["score"]) for e in leaderboard]
    assert ranked[3] == (4, "team-3", 0)


def test_a_crosstiles_contest_is_outside_the_contest_api(pipe: Pipeline) -> None:
    pipe.add_contest("boards", game="crosstiles", lexicon="tiny")
    assert [c["id"] for c in pipe.client.get("/clics/contests").json()] == ["open"]
    response = pipe.client.get("/clics/contests/boards/scoreboard")
    assert response.status_code == 404
    assert "which the Contest API does not serve" in response.json()["message"]


def test_errors_take_the_specs_shape_and_an_unknown_token_is_refused(pipe: Pipeline) -> None:
    missing = pipe.client.get("/clics/contests/open/submissions/nope")
    assert missing.status_code == 404 and missing.json()["code"] == 404
    refused = pipe.client.get("/clics/contests/open/state", headers={"Authorization": "Bearer x"})
    assert refused.status_code == 401 and refused.json() == {
        "code": 401,
        "message": "unknown token",
    }
    assert pipe.client.get("/clics/contests/open/event-feed?since_token=99999").status_code == 400
    odd = pipe.client.get("/clics/contests/open/event-feed", params={"since_token": "\u00b2"})
    assert odd.status_code == 400 and odd.json()["code"] == 400  # a digit int() refuses


def test_a_process_following_its_most_feeds_answers_another_with_503(pipe: Pipeline) -> None:
    hub = pipe.services.clics_feed
    hub.most = 0
    busy = pipe.client.get("/clics/contests/open/event-feed")
    assert busy.status_code == 503 and busy.headers["retry-after"] == "5"
    ended = pipe.client.get("/clics/contests/open/event-feed?stream=false")
    assert ended.status_code == 200  # a feed that ends once caught up holds nothing


def basic(token: str, user: str = "admin") -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{token}".encode()).decode()}


@pytest.mark.parametrize(
    "credentials",
    ["Basic \u00e9t\u00e9", "Basic " + base64.b64encode(b"admin:\xff\xfe").decode(), "Basic ???"],
)
def test_basic_credentials_of_any_bytes_are_refused_with_401(
    pipe: Pipeline, credentials: str
) -> None:
    """Latin-1 in the header, base64 of bytes that are not UTF-8, or not base64 at all."""
    answer = pipe.client.get(
        "/clics/contests/open/judgements",
        headers={"Authorization": credentials.encode("latin-1")},
    )
    assert answer.status_code == 401, answer.text
    assert answer.json()["message"] == "malformed basic credentials"


def frozen_contest(pipe: Pipeline) -> tuple[TeamLogin, TeamLogin, str]:
    """A contest frozen after each team's first upload; each then uploads again."""
    now = datetime.now(UTC)
    body = {
        "id": "open", "title": "Open", "lexicon": "tiny",
        "opens_at": clock.format_time(now - timedelta(hours=1)),
        "closes_at": clock.format_time(now + timedelta(hours=1)),
        "freeze_at": clock.format_time(now + timedelta(seconds=1)),
    }  # fmt: skip
    pipe.add_lexicon()
    assert pipe.client.post("/v1/contests", json=body, headers=ADMIN).status_code == 201
    ravens, owls = pipe.add_team("ravens"), pipe.add_team("owls")
    pipe.accepted(ravens, MOVES[0])
    pipe.accepted(owls, MOVES[1])
    drain(pipe.services)
    while clock.now() < body["freeze_at"]:
        time.sleep(0.05)
    late = pipe.accepted(ravens, MOVES[3])["id"]
    pipe.accepted(owls, MOVES[2])
    drain(pipe.services)
    return ravens, owls, str(late)


def test_while_frozen_the_public_misses_late_verdicts_a_team_sees_its_own(tmp_path: Any) -> None:
    from devstack.testing.pipeline import open_pipeline

    with open_pipeline(tmp_path) as pipe:
        ravens, _, late = frozen_contest(pipe)
        path = "/clics/contests/open/judgements"
        public = pipe.client.get(path).json()
        assert len(public) == 2 and late not in {j["submission_id"] for j in public}
        mine = pipe.client.get(path, headers=ravens.headers).json()
        assert late in {j["submission_id"] for j in mine} and len(mine) == 3
        assert len(pipe.client.get(path, headers=basic(pipe.services.admin_token)).json()) == 4
        state = pipe.client.get("/clics/contests/open/state").json()
        assert state["frozen"] is not None and state["thawed"] is None
        rows = pipe.client.get("/clics/contests/open/scoreboard").json()["rows"]
        assert [r["problems"][0]["num_pending"] for r in rows] == [1, 1]
        events = feed(pipe)
        assert late not in {e["data"]["submission_id"] for e in events if e["type"] == "judgements"}
        token = events[-1]["token"]
        thawed = pipe.client.post("/v1/contests/open/thaw", headers=ADMIN)
        assert thawed.status_code == 200, thawed.text
        revealed = feed(pipe, f"since_token={token}&stream=false")
        assert revealed[0]["type"] == "state" and revealed[0]["data"]["thawed"] is not None
        assert late in {e["data"]["submission_id"] for e in revealed if e["type"] == "judgements"}
        time.sleep(1.1)  # public reads are shared for up to a second
        assert len(pipe.client.get(path).json()) == 4


def test_the_feed_filters_collections_and_resumes_after_a_token(
    pipe: Pipeline, team: TeamLogin
) -> None:
    first = pipe.accepted(team, MOVES[0])["id"]
    drain(pipe.services)
    events = feed(pipe)
    assert [e for e in events if "token" in e] == [events[-1]]
    second = pipe.accepted(team, MOVES[1])["id"]
    drain(pipe.services)
    later = feed(pipe, f"since_token={events[-1]['token']}&stream=false")
    assert {(e["type"], e["id"]) for e in later if e["type"] == "submissions"} == {
        ("submissions", second)
    }
    assert int(later[-1]["token"]) > int(events[-1]["token"])
    only = pipe.client.get(f"/clics/contests/open/judgements?submission_id={first}").json()
    assert [j["submission_id"] for j in only] == [first]


def test_followers_share_one_poller_and_hear_of_a_new_judgement(
    pipe: Pipeline, team: TeamLogin
) -> None:
    reader = pipe.services.clics
    assert reader is not None
    contest = pipe.store.get_contest("open")
    assert contest is not None

    async def follow_all() -> tuple[list[list[dict[str, Any]]], int]:
        hub = FeedHub(reader, asyncio.to_thread, poll_s=0.05)  # type: ignore[arg-type]
        start = await hub.last_event()
        viewers = [Viewer()] * 4 + [Viewer(Role.ADMIN)]
        feeds = [hub.follow(contest, v, start, None, True) for v in viewers]
        got: list[list[dict[str, Any]]] = [[] for _ in feeds]

        async def read(n: int) -> None:
            async for chunk in feeds[n]:
                got[n] += [json.loads(line) for line in chunk.splitlines() if line]
                if any(e["type"] == "judgements" for e in got[n]):
                    return

        readers = [asyncio.create_task(read(n)) for n in range(len(feeds))]
        await asyncio.sleep(0.2)
        await asyncio.to_thread(pipe.accepted, team, MOVES[2])
        await asyncio.to_thread(drain, pipe.services)
        await asyncio.wait_for(asyncio.gather(*readers), 10)
        for each in feeds:
            await each.aclose()  # type: ignore[attr-defined]
        return got, hub.steps

    got, steps = asyncio.run(follow_all())
    for events in got:
        kinds = [e["type"] for e in events]
        assert kinds.index("submissions") < kinds.index("judgements")
    assert got[0] == got[1]
    assert 0 < steps < 200  # one poller's steps, not one per follower


def test_a_deleted_team_leaves_the_feed_judgements_first_then_uploads_then_itself(
    pipe: Pipeline, team: TeamLogin
) -> None:
    sid = pipe.accepted(team, MOVES[0])["id"]
    drain(pipe.services)
    token = feed(pipe)[-1]["token"]
    assert pipe.client.delete(f"/v1/teams/{team.id}", headers=ADMIN).status_code == 200
    gone = [(e["type"], e["id"]) for e in feed(pipe, f"since_token={token}&stream=false")
            if e["data"] is None]  # fmt: skip
    assert gone[-2:] == [("submissions", sid), ("teams", team.id)]
    assert ("judgements", f"{sid}-0") in gone[:-2]
    assert pipe.client.get("/clics/contests/open/teams").json() == []


def public_reads(pipe: Pipeline) -> dict[str, Any]:
    """What the public reads of the contest now (not a shared answer from before)."""
    pipe.services.public.forget(("clics", "open"))
    found = {
        name: pipe.client.get(f"/clics/contests/open/{name}").json()
        for name in ("problems", "judgements", "submissions", "state")
    }
    found["rows"] = pipe.client.get("/clics/contests/open/scoreboard").json()["rows"]
    return found


def test_while_frozen_judging_a_hidden_upload_shows_the_public_nothing(tmp_path: Any) -> None:
    """No line of the public feed, and no public read, changes when an upload received during
    the freeze is judged: not even the problem sent again unchanged (its time would tell)."""
    from devstack.testing.pipeline import open_pipeline

    with open_pipeline(tmp_path) as pipe:
        _, owls, _ = frozen_contest(pipe)
        hidden = str(pipe.accepted(owls, MOVES[1] + MOVES[3])["id"])
        stored = feed(pipe)[-1]["token"]
        before = public_reads(pipe)
        assert [p["max_score"] for p in before["problems"]] == [8]
        drain(pipe.services)
        assert pipe.state(hidden) == "judged"
        assert public_reads(pipe) == before
        admin = feed(pipe, f"since_token={stored}&stream=false", **ADMIN)
        assert ("judgements", f"{hidden[:32]}-0") in {(e["type"], e["id"]) for e in admin}
        assert [e["data"]["max_score"] for e in admin if e["type"] == "problems"] == [12]
        public = feed(pipe, f"since_token={stored}&stream=false")
        assert [e["type"] for e in public] == ["state"]  # a resumed feed starts with the state
        thawed = pipe.client.post("/v1/contests/open/thaw", headers=ADMIN)
        assert thawed.status_code == 200, thawed.text
        revealed = feed(pipe, f"since_token={stored}&stream=false")
        shown = {(e["type"], e["id"]) for e in revealed}
        assert ("judgements", f"{hidden[:32]}-0") in shown and ("problems", "wordytaire") in shown


def test_the_feed_names_every_object_it_sends_and_sends_no_collection(
    pipe: Pipeline, team: TeamLogin
) -> None:
    """Configuration too goes object by object (the spec's consistency checker and consumers
    of earlier versions read no collection line); only the singletons have no id."""
    pipe.accepted(team, MOVES[0])
    drain(pipe.services)
    for headers in ({}, ADMIN):
        events = feed(pipe, **headers)
        assert all(not isinstance(e["data"], list) for e in events)
        assert all(
            e["id"] == e["data"]["id"] for e in events if e["type"] not in ("contest", "state")
        )
        named = {(e["type"], e["id"]) for e in events}
        for kind in ("judgement-types", "languages", "problems"):
            listed = pipe.client.get(f"/clics/contests/open/{kind}", headers=headers).json()
            assert {(kind, item["id"]) for item in listed} <= named
