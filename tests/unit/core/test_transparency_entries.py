"""The log's entries: canonical bytes, one spelling each, every field of its kind and type;
what a sequence of them implies."""

from __future__ import annotations

import pytest

from core import transparency
from core.transparency import EntryError, decode, encode, implied

UPLOAD = {
    "type": "upload", "submission": "s1", "team": "t1", "sha256": "ab" * 32, "size": 12,
    "received_at": "2026-12-03T10:00:00.000000Z",
}  # fmt: skip
VERDICT = {
    "type": "verdict", "submission": "s1", "lexicon": "l", "layout": "y", "judge_version": "1",
    "result": {"score": 7, "legal": 1, "illegal": 0, "tiles": 3},
}  # fmt: skip


def test_an_entry_decodes_to_the_fields_it_was_encoded_from() -> None:
    assert decode(encode(UPLOAD)) == {"v": 1, **UPLOAD}
    assert encode(UPLOAD).startswith(b'{"received_at"')  # keys sorted, no spaces


@pytest.mark.parametrize(
    "data",
    [
        b'{"type":"upload","v":1}',  # fields missing
        b'{"submission":"s1","type":"failed","v":1}',  # its reason missing
        b'{"reason":"x","submission":"s1","type":"failed","v":1,"zzz":1}',  # a field too many
        b'{"reason":"x","submission":"s1","type":"failed","v":1.0}',  # a float
        b'{"reason":NaN,"submission":"s1","type":"failed","v":1}',
        b'{"reason":true,"submission":"s1","type":"failed","v":1}',  # not a string
        b'{"team":"t","type":"team_deleted","v":' + b"9" * 5000 + b"}",  # a huge integer
        b'{"submission": "s1","reason":"x","type":"failed","v":1}',  # not canonical
        b'{"reason":"x","submission":"s1","type":"made_up","v":1}',
        b"\xff",
        b"[]",
    ],
)
def test_anything_but_a_canonical_entry_of_a_known_kind_is_refused(data: bytes) -> None:
    with pytest.raises(EntryError):
        decode(data)


def test_the_replay_names_a_verdict_for_an_upload_never_logged_and_one_after_the_close() -> None:
    late = {**UPLOAD, "submission": "s2", "received_at": "2026-12-03T11:00:00.000000Z"}
    close = {"type": "close", "closes_at": "2026-12-03T10:30:00.000000Z"}
    entries = [decode(encode(e)) for e in ({**VERDICT, "submission": "s0"}, UPLOAD, close, late)]
    state = implied(enumerate(entries))
    assert state.problems == [
        "entry 0: a verdict for s0, never logged as uploaded",
        "entry 3: an upload received after the close",
    ]


def test_a_shared_game_passed_on_counts_with_its_new_owners_copy() -> None:
    owner = {
        "type": "owner", "submission": "s1", "team": "t2", "sha256": "cd" * 32,
        "received_at": "2026-12-03T10:05:00.000000Z",
    }  # fmt: skip
    state = transparency.implied(
        enumerate([UPLOAD, VERDICT, owner, {"type": "team_deleted", "team": "t1"}])
    )
    live = state.live()
    assert live["s1"].team == "t2" and live["s1"].received_at == owner["received_at"]
    assert live["s1"].verdict == VERDICT["result"]
