"""Registering a layout whose values could overflow a result column is a 422, and nothing is
stored."""

from __future__ import annotations

import json

from devstack.testing.pipeline import ADMIN, Pipeline
from judge.wordytaire import default_layout


def post_layout(pipe: Pipeline, body: bytes) -> tuple[int, dict[str, str]]:
    response = pipe.client.post(
        "/v1/layouts", params={"name": "hostile"}, content=body,
        headers={**ADMIN, "Content-Type": "application/json"},
    )  # fmt: skip
    return response.status_code, response.json()


def test_a_layout_with_letter_points_of_4e18_is_a_422_and_is_not_registered(
    pipe: Pipeline,
) -> None:
    doc = json.loads(default_layout().to_json())
    doc["letters"]["a"] = [4 * 10**18, 846]
    before = len(pipe.store.all_rules())
    status, body = post_layout(pipe, json.dumps(doc).encode())
    assert status == 422
    assert "not a layout" in json.dumps(body) and "points" in json.dumps(body)
    assert len(pipe.store.all_rules()) == before


def test_a_layout_of_word_bonuses_only_is_a_422(pipe: Pipeline) -> None:
    doc = json.loads(default_layout().to_json())
    doc["period"], doc["bonus"] = 2, [["W3", "W2"], ["W2", "W3"]]
    status, body = post_layout(pipe, json.dumps(doc).encode())
    assert status == 422
    assert "word bonuses" in json.dumps(body)


def test_the_shipped_layout_is_still_registered(pipe: Pipeline) -> None:
    status, _ = post_layout(pipe, default_layout().to_json())
    assert status == 201
