"""How a message carries an upload's bytes: text as text, anything else in base64, or a mark
where they wait beside it."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.messages import KEPT_MARK, TEXT_MARK, carried, group_args, kept_beside, unpack_group
from core.tuning import GROUP_INLINE, INLINE_LIMIT


def test_a_text_upload_rides_as_its_own_text_and_a_binary_one_in_base64() -> None:
    text = b"25 37 32 37 preserve\r\n-4 0 0 0 ornes\n\t\n"
    binary = b"\x00\x01" + "caf\u00e9".encode()

    assert carried(text) == TEXT_MARK + text.decode("ascii")
    assert carried(binary) == base64.b64encode(binary).decode("ascii")


@pytest.mark.parametrize("letter", ["\u00e9", "\u00a9", "\u00a0", "\U0001f600"])
def test_text_with_a_few_letters_beyond_ascii_rides_as_text(letter: str) -> None:
    text = (f"0 0 2 0 caf{letter}\n" + "0 1 2 0 cat\n" * 20).encode()

    assert carried(text) == TEXT_MARK + text.decode("utf-8")


@pytest.mark.parametrize(
    "data",
    [
        pytest.param("\u00e9t\u00e9\n".encode() * 50, id="mostly beyond ascii"),
        pytest.param(b"0 0 2 0 caf\xe9\n", id="not utf-8 (latin-1)"),
        pytest.param("0 0 2 0 a\u0085b\n".encode(), id="a C1 control character"),
        pytest.param(b"0 0 2 0 ab\x7f\n", id="DEL"),
        pytest.param(b"0 0 2 0 ab\x0b\n", id="a C0 control character"),
        pytest.param(b"\xed\xa0\x80", id="an encoded surrogate"),
    ],
)
def test_other_bytes_ride_in_base64(data: bytes) -> None:
    assert carried(data) == base64.b64encode(data).decode("ascii")


def test_a_message_from_before_text_was_carried_as_text_still_reads() -> None:
    older = [base64.b64encode(b"0 0 2 0 cat\n").decode("ascii"), None]

    assert unpack_group(["a", "b"], older) == {"a": b"0 0 2 0 cat\n"}


@given(
    st.lists(
        st.binary(max_size=64)
        | st.text(max_size=64).map(str.encode)
        | st.sampled_from(
            [b"", b"~", b"~~x\n", b"0 0 2 0 cat\n", "0 0 2 0 \u00e9t\u00e9 ".encode()]
        )
    )
)
def test_every_upload_comes_out_of_its_message_byte_for_byte(uploads: list[bytes]) -> None:
    ids = [f"s{n}" for n in range(len(uploads))]

    sent, inline = group_args(list(zip(ids, uploads, strict=True)))

    assert unpack_group(sent, inline) == dict(zip(ids, uploads, strict=True))


def test_bytes_kept_beside_a_message_leave_a_mark_within_the_same_bounds() -> None:
    big = b"m" * INLINE_LIMIT  # four of them fill one message's budget
    assert 4 * INLINE_LIMIT == GROUP_INLINE
    uploads: list[tuple[str, bytes | None]] = [
        ("small", b"0 0 2 0 cat\n"),
        ("from-s3", None),
        ("too-big", big + b"m"),
        *[(f"big{n}", big) for n in range(4)],
    ]

    ids, inline = group_args(uploads, beside=True)

    assert ids == [sid for sid, _ in uploads]
    assert inline == [KEPT_MARK, None, None, KEPT_MARK, KEPT_MARK, KEPT_MARK, None]
    assert kept_beside(ids, inline) == ["small", "big0", "big1", "big2"]
    assert unpack_group(ids, inline) == {}  # no bytes in the message itself


def test_a_worker_of_an_older_version_finds_no_bytes_in_the_mark() -> None:
    """Its decoding (base64, skipping what is not in the alphabet) gives no bytes, which fail
    the upload's digest: it reads S3."""
    assert base64.b64decode(KEPT_MARK) == b""
    assert carried(b"") != KEPT_MARK and not KEPT_MARK.startswith(TEXT_MARK)
