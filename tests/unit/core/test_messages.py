"""How a message carries an upload's bytes: text as text (its line breaks as a character JSON
need not escape), anything else in base64."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.messages import LINES_MARK, TEXT_MARK, carried, group_args, unpack_group


def test_a_text_upload_rides_as_its_own_text_and_a_binary_one_in_base64() -> None:
    text = b"25 37 32 37 preserve\r\n-4 0 0 0 ornes\n\t\n"
    binary = b"\x00\x01" + "caf\u00e9".encode()

    assert carried(text) == LINES_MARK + "|" + "25 37 32 37 preserve\r|-4 0 0 0 ornes|\t|"
    assert carried(binary) == base64.b64encode(binary).decode("ascii")


def test_line_breaks_stand_in_as_the_first_character_the_upload_lacks() -> None:
    text = b"#note | a `quoted` word\n0 0 2 0 cat\n"

    assert carried(text) == LINES_MARK + "^" + "#note | a `quoted` word^0 0 2 0 cat^"
    assert unpack_group(["a"], [carried(text)]) == {"a": text}


def test_text_holding_every_stand_in_rides_as_it_is() -> None:
    text = b"0 0 2 0 |`^{}@$\n0 1 2 0 cat\n"

    assert carried(text) == TEXT_MARK + text.decode("ascii")


def test_a_line_break_stand_in_no_version_uses_is_refused() -> None:
    with pytest.raises(ValueError, match="stand in as 'x'"):
        unpack_group(["a"], [LINES_MARK + "xcat"])


@pytest.mark.parametrize("letter", ["\u00e9", "\u00a9", "\u00a0", "\U0001f600"])
def test_text_with_a_few_letters_beyond_ascii_rides_as_text(letter: str) -> None:
    text = (f"0 0 2 0 caf{letter}\n" + "0 1 2 0 cat\n" * 20).encode()

    assert carried(text) == LINES_MARK + "|" + text.decode("utf-8").replace("\n", "|")


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


def test_messages_from_before_line_breaks_stood_in_still_read() -> None:
    older = [base64.b64encode(b"0 0 2 0 cat\n").decode("ascii"), None, TEXT_MARK + "0 1 2 0 at\n"]

    assert unpack_group(["a", "b", "c"], older) == {"a": b"0 0 2 0 cat\n", "c": b"0 1 2 0 at\n"}


@given(
    st.lists(
        st.binary(max_size=64)
        | st.text(max_size=64).map(str.encode)
        | st.sampled_from(
            [
                b"",
                b"~",
                b"~~x\n",
                b"!|x\n|",
                b"|`^{}@$\n",
                b"0 0 2 0 cat\n",
                "0 0 2 0 \u00e9t\u00e9 ".encode(),
            ]
        )
    )
)
def test_every_upload_comes_out_of_its_message_byte_for_byte(uploads: list[bytes]) -> None:
    ids = [f"s{n}" for n in range(len(uploads))]

    sent, inline = group_args(list(zip(ids, uploads, strict=True)))

    assert unpack_group(sent, inline) == dict(zip(ids, uploads, strict=True))
