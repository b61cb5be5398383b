"""A worker host's copies of uploads on its disk (`infra.upload_copies`): read back whole,
bounded by their budget, forgotten on demand, and never a reason for judging to fail."""

from __future__ import annotations

from pathlib import Path

from infra.upload_copies import KEEP_SHARE, HostCopies

KEY = "uploads/wt/ravens/0123abcd"


def test_a_kept_upload_is_read_back_whole_and_forgotten_on_demand(tmp_path: Path) -> None:
    copies = HostCopies(tmp_path / "copies", 1024 * 1024)
    copies.keep(KEY, b"0 0 2 0 cat\n")
    copies.keep("uploads/wt/ravens/other", b"0 0 2 0 tea\n")

    assert copies.get(KEY) == b"0 0 2 0 cat\n"
    assert copies.get("uploads/wt/ravens/never") is None
    assert copies.forget([KEY, "uploads/wt/ravens/never"]) == 1
    assert copies.get(KEY) is None
    assert copies.get("uploads/wt/ravens/other") == b"0 0 2 0 tea\n"
    # Named by a digest of the key: nothing of the key (team, contest) in the file names.
    names = [path.name for path in (tmp_path / "copies").rglob("*")]
    assert names and not any("ravens" in name or name == "wt" for name in names)


def test_a_key_kept_already_is_not_written_again(tmp_path: Path) -> None:
    copies = HostCopies(tmp_path / "copies", 1024 * 1024)
    copies.keep(KEY, b"first\n")
    copies.keep(KEY, b"second\n")

    assert copies.get(KEY) == b"first\n"


def test_the_directory_stays_within_its_budget_dropping_the_oldest_copies(tmp_path: Path) -> None:
    budget = 64 * 1024
    copies = HostCopies(tmp_path / "copies", budget)
    for n in range(200):  # 200 KB written through a 64 KB budget
        copies.keep(f"uploads/wt/ravens/{n}", bytes([n % 256]) * 1000)
        on_disk = sum(p.stat().st_size for p in (tmp_path / "copies").rglob("*") if p.is_file())
        # Pruned whenever an eighth of the budget was written since the last prune.
        assert on_disk <= budget * (KEEP_SHARE + 0.125) + 1000

    assert copies.get("uploads/wt/ravens/199") == bytes([199]) * 1000  # the newest stay
    assert copies.get("uploads/wt/ravens/0") is None  # the oldest went


def test_an_upload_larger_than_a_share_of_the_budget_is_not_kept(tmp_path: Path) -> None:
    copies = HostCopies(tmp_path / "copies", 8 * 1024)

    copies.keep(KEY, b"x" * 2000)

    assert copies.get(KEY) is None


def test_a_path_taken_by_a_file_leaves_the_copy_out_without_an_error(tmp_path: Path) -> None:
    root = tmp_path / "copies"
    root.write_bytes(b"not a directory")  # refused for root as well
    copies = HostCopies(root, 1024 * 1024)

    copies.keep(KEY, b"0 0 2 0 cat\n")

    assert copies.get(KEY) is None
    assert list(tmp_path.iterdir()) == [root]  # no temporary file left behind


def test_clear_removes_every_copy(tmp_path: Path) -> None:
    copies = HostCopies(tmp_path / "copies", 1024 * 1024)
    copies.keep(KEY, b"0 0 2 0 cat\n")

    copies.clear()

    assert copies.get(KEY) is None
    assert not (tmp_path / "copies").exists()
