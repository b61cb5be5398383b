"""Reports kept gzipped in S3: packing, reading either form back, and Accept-Encoding."""

from __future__ import annotations

import pytest

from core import report_blobs

REPORT = b'{"total":11,"lines":[{"line":1,"ok":true,"score":11}]}'


def test_a_packed_report_unpacks_to_its_json_and_a_plain_one_stays_as_it_is() -> None:
    packed = report_blobs.pack(REPORT)

    assert report_blobs.is_packed(packed)
    assert not report_blobs.is_packed(REPORT)
    assert report_blobs.unpack(packed) == REPORT
    assert report_blobs.unpack(REPORT) == REPORT


def test_packing_the_same_report_twice_gives_the_same_bytes() -> None:
    # A redelivered task writes the same object again, byte for byte.
    assert report_blobs.pack(REPORT) == report_blobs.pack(REPORT)


@pytest.mark.parametrize(
    ("header", "accepted"),
    [
        ("gzip", True),
        ("gzip, deflate, br", True),
        ("deflate, GZIP;q=0.5", True),
        ("*", True),
        ("identity", False),
        ("", False),
        ("gzip;q=0", False),
        ("gzip; q=0.0, identity", False),
        ("br, gzip;q=oops", False),
        ("x-gzip", True),
        ("*;q=0, gzip", True),
        ("gzip;q=0, *", False),
        ("*;q=0", False),
    ],
)
def test_accept_encoding_admits_gzip_named_or_by_star_unless_weighed_zero(
    header: str, accepted: bool
) -> None:
    assert report_blobs.accepts_gzip(header) is accepted
