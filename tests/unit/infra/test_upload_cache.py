"""The worker host's upload cache on disk: what it keeps, how large it may grow, how processes
share it, and that no failure of the disk reaches the judging."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from infra import upload_cache
from infra.upload_cache import HEADER, DiskUploadCache

KIB = 1024


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def segments(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.seg"))


def kept_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in segments(directory))


@pytest.fixture(autouse=True)
def rescan_at_every_miss(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upload_cache, "RESCAN_S", 0.0)


def test_an_upload_kept_is_found_by_its_digest_readable_by_its_owner_alone(
    tmp_path: Path,
) -> None:
    cache = DiskUploadCache(tmp_path, 1024 * KIB)
    data = b"0 0 2 0 cat\n"

    cache.put(digest(data), data)

    assert cache.get(digest(data)) == data
    assert cache.get(digest(b"another")) is None
    [segment] = segments(tmp_path)
    assert stat.S_IMODE(segment.stat().st_mode) == 0o600
    assert segment.stat().st_size == HEADER + len(data)


def test_a_name_that_is_not_a_lower_case_digest_is_neither_kept_nor_looked_up(
    tmp_path: Path,
) -> None:
    cache = DiskUploadCache(tmp_path / "cache", 1024 * KIB)

    cache.put("../../secret", b"x")
    cache.put(digest(b"x").upper(), b"x")

    assert cache.get("../secret") is None
    assert cache.get(digest(b"x").upper()) is None
    assert not (tmp_path / "cache").exists()


def test_an_upload_over_a_sixteenth_of_the_capacity_is_not_kept(tmp_path: Path) -> None:
    cache = DiskUploadCache(tmp_path, 160 * KIB)
    small, large = b"s" * (10 * KIB - HEADER), b"l" * (10 * KIB - HEADER + 1)

    cache.put(digest(small), small)
    cache.put(digest(large), large)

    assert cache.get(digest(small)) == small
    assert cache.get(digest(large)) is None


def test_an_upload_kept_by_another_process_of_the_host_is_found(tmp_path: Path) -> None:
    writer, reader = DiskUploadCache(tmp_path, 1024 * KIB), DiskUploadCache(tmp_path, 1024 * KIB)
    first, second = b"0 0 2 0 cat\n", b"0 0 2 0 tea\n"

    writer.put(digest(first), first)
    assert reader.get(digest(first)) == first
    writer.put(digest(second), second)  # appended after the reader's look

    assert reader.get(digest(second)) == second


def test_writing_past_the_capacity_deletes_the_oldest_segments_first(tmp_path: Path) -> None:
    capacity = 160 * KIB
    cache, other = DiskUploadCache(tmp_path, capacity), DiskUploadCache(tmp_path, capacity)
    uploads = [bytes([n]) * (4 * KIB) for n in range(120)]  # 480 KiB in all
    for n, data in enumerate(uploads):
        (cache if n % 2 else other).put(digest(data), data)
        # Two processes: never more than the capacity and the segment each one writes.
        assert kept_bytes(tmp_path) <= capacity + 2 * cache.segment_bytes

    found = [cache.get(digest(data)) == data for data in uploads]
    # The newest that fit with a segment to spare for each writer are kept; nothing older
    # than the capacity and those segments hold is.
    each = 4 * KIB + HEADER
    assert all(found[-((capacity - 2 * cache.segment_bytes) // each) :])
    assert not any(found[: -((capacity + 2 * cache.segment_bytes) // each)])


def test_a_segment_holds_a_bounded_number_of_records_however_small(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(upload_cache, "RECORDS_A_SEGMENT", 10)
    cache = DiskUploadCache(tmp_path, 1024 * KIB)
    uploads = [b"%d\n" % n for n in range(35)]

    for data in uploads:
        cache.put(digest(data), data)

    assert len(segments(tmp_path)) == 4
    assert all(cache.get(digest(data)) == data for data in uploads)


def test_a_record_torn_by_a_writer_that_died_is_skipped_and_those_before_it_found(
    tmp_path: Path,
) -> None:
    whole = b"0 0 2 0 cat\n"
    torn = hashlib.sha256(b"torn").digest() + (1000).to_bytes(8, "big") + b"only part"
    (tmp_path / "00000000000000000001-1-0.seg").write_bytes(
        hashlib.sha256(whole).digest() + len(whole).to_bytes(8, "big") + whole + torn
    )
    cache = DiskUploadCache(tmp_path, 1024 * KIB)

    assert cache.get(digest(whole)) == whole
    assert cache.get(digest(b"torn")) is None


def test_a_forked_process_writes_a_segment_of_its_own(tmp_path: Path) -> None:
    cache = DiskUploadCache(tmp_path, 1024 * KIB)
    before, after = b"0 0 2 0 cat\n", b"0 0 2 0 tea\n"
    cache.put(digest(before), before)

    child = os.fork()
    if child == 0:  # pragma: no cover (the child's outcome is its exit status)
        cache.put(digest(after), after)
        os._exit(0 if cache.get(digest(after)) == after else 1)
    _, status = os.waitpid(child, 0)

    assert os.waitstatus_to_exitcode(status) == 0
    assert len(segments(tmp_path)) == 2
    assert cache.get(digest(before)) == before
    assert cache.get(digest(after)) == after
    cache.put(digest(b"more"), b"more")  # the parent's segment still at its own end
    assert cache.get(digest(b"more")) == b"more"


class Warnings:
    def __init__(self) -> None:
        self.events: list[str] = []

    def warning(self, event: str, **_: object) -> None:
        self.events.append(event)


def test_a_disk_that_cannot_be_written_makes_every_upload_a_miss_and_raises_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    warnings = Warnings()
    monkeypatch.setattr(upload_cache, "log", warnings)
    (tmp_path / "cache").write_bytes(b"a file where the folder should be")
    cache = DiskUploadCache(tmp_path / "cache", 1024 * KIB)

    for n in range(3):
        data = bytes([n]) * 100
        cache.put(digest(data), data)
        assert cache.get(digest(data)) is None

    assert warnings.events == ["upload_cache.unwritable"]  # once, not for every upload
    cache.expire()  # as the expiry thread does: it logs and lives on
    assert warnings.events[1:] == ["upload_cache.expiry_failed"]


def test_a_segment_not_written_for_its_age_is_deleted_with_its_uploads_even_the_one_being_written(
    tmp_path: Path,
) -> None:
    cache = DiskUploadCache(tmp_path, 1024 * KIB, max_age=3600)
    old, fresh = b"0 0 2 0 cat\n", b"0 0 2 0 tea\n"
    cache.put(digest(old), old)
    [segment] = segments(tmp_path)
    os.utime(segment, (segment.stat().st_atime, segment.stat().st_mtime - 3601))
    other = DiskUploadCache(tmp_path, 1024 * KIB, max_age=3600)
    other.put(digest(fresh), fresh)

    cache.expire()

    assert segments(tmp_path) != [] and segment not in segments(tmp_path)
    assert cache.get(digest(old)) is None
    assert cache.get(digest(fresh)) == fresh
    cache.put(digest(old), old)  # kept again, in a new segment
    assert cache.get(digest(old)) == old


def test_a_writer_whose_segment_another_process_deleted_starts_a_new_one_and_serves_none_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(upload_cache, "LINK_CHECK_S", 0.0)
    cache = DiskUploadCache(tmp_path, 1024 * KIB)
    first, second = b"0 0 2 0 cat\n", b"0 0 2 0 tea\n"
    cache.put(digest(first), first)
    [deleted] = segments(tmp_path)
    deleted.unlink()  # as another process's trim or expiry does

    cache.put(digest(second), second)

    [written] = segments(tmp_path)
    assert written != deleted
    assert DiskUploadCache(tmp_path, 1024 * KIB).get(digest(second)) == second
    assert cache.get(digest(first)) is None  # deleted is deleted, for its writer too


def test_forgetting_an_upload_overwrites_its_bytes_in_every_segment_and_keeps_the_rest(
    tmp_path: Path,
) -> None:
    one, other = DiskUploadCache(tmp_path, 1024 * KIB), DiskUploadCache(tmp_path, 1024 * KIB)
    doomed, kept, again = b"a doomed team's game\n", b"a kept game\n", b"more of it\n"
    one.put(digest(doomed), doomed)
    one.put(digest(kept), kept)
    other.put(digest(doomed), doomed)  # kept twice, by two processes
    other.put(digest(again), again)
    assert other.get(digest(doomed)) == doomed

    forgotten = DiskUploadCache(tmp_path, 1024 * KIB).forget([digest(doomed), "not a digest"])

    assert forgotten == 2
    assert all(doomed not in segment.read_bytes() for segment in segments(tmp_path))
    assert other.get(digest(doomed)) != doomed  # indexed before: zeros, which fail the digest
    fresh = DiskUploadCache(tmp_path, 1024 * KIB)
    assert fresh.get(digest(doomed)) is None
    assert [fresh.get(digest(data)) for data in (kept, again)] == [kept, again]


def test_a_folder_names_its_host_once_for_every_process_and_another_folder_another(
    tmp_path: Path,
) -> None:
    first = DiskUploadCache(tmp_path / "a", 1024 * KIB).host
    again = DiskUploadCache(tmp_path / "a", 1024 * KIB).host  # another process of the host
    other = DiskUploadCache(tmp_path / "b", 1024 * KIB).host

    assert first is not None and first.isalnum()
    assert again == first and other not in (None, first)
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["host-id"]  # no leftovers


def test_a_folder_that_cannot_be_made_names_no_host_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    warnings = Warnings()
    monkeypatch.setattr(upload_cache, "log", warnings)
    (tmp_path / "file").write_bytes(b"")

    assert DiskUploadCache(tmp_path / "file" / "cache", 1024 * KIB).host is None
    assert warnings.events == ["upload_cache.no_host_id"]
