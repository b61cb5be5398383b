"""A report's verdict lines as written by `report_lines.json_lines`, compiled and as source: the
same text, and that text is exactly the compact JSON of each verdict's `to_json()`."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from devstack.testing.wordytaire_engines import COMPILED, LINE_WRITERS, LINES_COMPILED
from judge.wordytaire import Reason, Verdict

details = st.one_of(
    st.sampled_from(["", 'a "quoted" word', "back\\slash", "tab\there", "é ünïcode ☃", "\x00\x1f"]),
    st.text(max_size=40),
)
verdicts = st.lists(
    st.one_of(
        st.builds(
            Verdict,
            line=st.integers(1, 10**6),
            reason=st.none(),
            score=st.integers(0, 10**6),
            tiles=st.integers(0, 15),
        ),
        st.builds(
            Verdict,
            line=st.integers(1, 10**6),
            reason=st.sampled_from(list(Reason)),
            detail=details,
        ),
    ),
    max_size=60,
)


def compact(verdict: Verdict) -> str:
    return json.dumps(verdict.to_json(), separators=(",", ":"))


@settings(max_examples=300, deadline=None)
@given(lines=verdicts, start=st.integers(0, 70), length=st.integers(0, 70), newline=st.booleans())
def test_both_builds_write_each_verdict_as_its_compact_json(lines, start, length, newline) -> None:
    separator = ",\n" if newline else ","
    shown = tuple(lines)
    expected = separator.join(compact(v) for v in shown[start : start + length])
    for build, write in LINE_WRITERS.items():
        assert write(shown, start, start + length, separator) == expected, build


def test_a_detail_shared_by_many_lines_is_written_on_each() -> None:
    shared = "it touches no tile on the board"
    shown = tuple(Verdict(n, Reason.NOT_CONNECTED, detail=shared) for n in range(1, 4))
    text = LINE_WRITERS["installed"](shown, 0, 3, ",")
    assert json.loads(f"[{text}]") == [v.to_json() for v in shown]


def test_the_line_writer_is_compiled_wherever_the_engine_is() -> None:
    """setup.py names both: a build that compiled the engine and not this would write every
    report at the pure-Python speed (and TILEJUDGE_PURE=1 compiles neither)."""
    assert LINES_COMPILED == COMPILED
