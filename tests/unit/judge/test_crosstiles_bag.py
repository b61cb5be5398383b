"""The seeded bag and the board file of Crosstiles, checked against the spec's own words."""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from typing import Any

import pytest

from judge.crosstiles import Board, BoardError, default_board
from judge.crosstiles.bag import Bag, Stream, shuffle
from judge.crosstiles.board import TILE_NAMES

CANONICAL = "".join(tile * count for tile, count in zip(
    TILE_NAMES, [9, 2, 2, 4, 12, 2, 3, 2, 9, 1, 1, 4, 2, 6, 8, 2, 1, 6, 4, 6, 4, 2, 2, 1, 2, 1, 2],
    strict=True,
))  # fmt: skip


def r(seed: str, k: int) -> int:
    """The spec's r(k), spelt out with hashlib."""
    digest = hashlib.sha256(f"{seed}:{k}".encode()).digest()
    return int.from_bytes(digest[:8], byteorder="big", signed=False)


def fisher_yates(tiles: list[str], seed: str, k: int) -> int:
    """Shuffle in place with r(k), r(k+1), ...; returns the next unused k."""
    for i in reversed(range(1, len(tiles))):
        j = r(seed, k) % (i + 1)
        k += 1
        tiles[i], tiles[j] = tiles[j], tiles[i]
    return k


def shuffled(seed: str) -> list[str]:
    tiles = list(CANONICAL)
    fisher_yates(tiles, seed, 0)
    return tiles


def exchanged_bag(seed: str, taken: int, aside: str) -> list[str]:
    """The bag after ``taken`` tiles were drawn from the first shuffle and then ``aside`` was
    exchanged: as many drawn again, the rest plus ``aside`` shuffled with r(99), r(100)..."""
    rest = shuffled(seed)[taken + len(aside) :] + list(aside)
    fisher_yates(rest, seed, len(CANONICAL) - 1)
    return rest


def names(codes: list[int]) -> str:
    return "".join(TILE_NAMES[code] for code in codes)


def test_the_canonical_bag_is_the_spec_s_hundred_tiles() -> None:
    assert len(CANONICAL) == 100 and CANONICAL.count("?") == 2
    assert CANONICAL.startswith("AAAAAAAAABBCC") and CANONICAL.endswith("XYYZ??")


def test_the_stream_is_sha256_of_seed_colon_k() -> None:
    stream = Stream("demo")
    assert [stream.next() for _ in range(5)] == [r("demo", k) for k in range(5)]
    assert stream.used == 5
    assert r("demo", 0) == int(hashlib.sha256(b"demo:0").hexdigest()[:16], 16)


def test_the_first_shuffle_matches_an_independent_computation() -> None:
    for seed in ("demo", "alpha", "x", "!~" * 64):
        bag = Bag(default_board().counts, seed)
        assert names(bag.contents()) == "".join(shuffled(seed))


def test_the_seed_demo_deals_the_racks_the_hand_made_logs_use() -> None:
    bag = Bag(default_board().counts, "demo")
    assert [names(bag.draw(7)) for _ in range(3)] == ["SDWRT?E", "EAGNORR", "SFETSKY"]
    assert bag.left == 100 - 21
    assert bag.stream.used == 99


def test_draws_come_from_the_front_and_stop_when_the_bag_is_empty() -> None:
    bag = Bag(default_board().counts, "demo")
    order = "".join(shuffled("demo"))
    assert names(bag.draw(95)) == order[:95]
    assert names(bag.draw(7)) == order[95:]
    assert bag.draw(7) == [] and bag.left == 0


def test_an_exchange_draws_first_then_puts_the_tiles_back_and_reshuffles() -> None:
    bag = Bag(default_board().counts, "demo")
    bag.draw(14)
    aside = [TILE_NAMES.index(tile) for tile in "SDW"]
    drawn = bag.exchange(aside)
    assert names(drawn) == "".join(shuffled("demo")[14:17])
    assert names(bag.contents()) == "".join(exchanged_bag("demo", 14, "SDW"))
    assert bag.stream.used == 99 + (86 - 1)


def test_the_set_aside_tiles_go_back_in_the_order_written() -> None:
    one, other = Bag(default_board().counts, "demo"), Bag(default_board().counts, "demo")
    for bag in (one, other):
        bag.draw(14)
    one.exchange([TILE_NAMES.index(tile) for tile in "SDW"])
    other.exchange([TILE_NAMES.index(tile) for tile in "WDS"])
    assert one.contents() != other.contents()
    assert sorted(one.contents()) == sorted(other.contents())


def test_shuffling_one_tile_or_none_uses_no_numbers() -> None:
    stream = Stream("demo")
    for tiles in ([], [3]):
        shuffle(tiles, stream)
    assert stream.used == 0


# -- the board file -----------------------------------------------------------------------

SPEC_TABLE = """
 1  TW .  .  DL .  .  .  TW .  .  .  DL .  .  TW
 2  .  DW .  .  .  TL .  .  .  TL .  .  .  DW .
 3  .  .  DW .  .  .  DL .  DL .  .  .  DW .  .
 4  DL .  .  DW .  .  .  DL .  .  .  DW .  .  DL
 5  .  .  .  .  DW .  .  .  .  .  DW .  .  .  .
 6  .  TL .  .  .  TL .  .  .  TL .  .  .  TL .
 7  .  .  DL .  .  .  DL .  DL .  .  .  DL .  .
 8  TW .  .  DL .  .  .  DW .  .  .  DL .  .  TW
 9  .  .  DL .  .  .  DL .  DL .  .  .  DL .  .
10  .  TL .  .  .  TL .  .  .  TL .  .  .  TL .
11  .  .  .  .  DW .  .  .  .  .  DW .  .  .  .
12  DL .  .  DW .  .  .  DL .  .  .  DW .  .  DL
13  .  .  DW .  .  .  DL .  DL .  .  .  DW .  .
14  .  DW .  .  .  TL .  .  .  TL .  .  .  DW .
15  TW .  .  DL .  .  .  TW .  .  .  DL .  .  TW
"""
SPEC_TILES = (
    "A 9 1, B 2 3, C 2 3, D 4 2, E 12 1, F 2 4, G 3 2, H 2 4, I 9 1, J 1 8, K 1 5, L 4 1, "
    "M 2 3, N 6 1, O 8 1, P 2 3, Q 1 10, R 6 1, S 4 1, T 6 1, U 4 1, V 2 4, W 2 4, X 1 8, "
    "Y 2 4, Z 1 10, ? 2 0"
)


def board_file() -> dict[str, Any]:
    path = resources.files("judge") / "data" / "crosstiles" / "board-1.json"
    doc: dict[str, Any] = json.loads(path.read_bytes())
    return doc


def test_the_shipped_board_is_the_spec_s_premium_table() -> None:
    rows = [tuple(line.split()[1:]) for line in SPEC_TABLE.strip().splitlines()]
    board = default_board()
    assert board.premiums == tuple(rows)
    assert board.premium("8H") == "DW" and board.premium("1A") == "TW"
    assert board.word_multipliers[7 * 15 + 7] == 2 and board.letter_multipliers[3] == 2


def test_the_shipped_board_holds_the_spec_s_tiles() -> None:
    board = default_board()
    for entry in SPEC_TILES.split(", "):
        tile, count, value = entry.split()
        code = TILE_NAMES.index(tile)
        assert (board.counts[code], board.values[code]) == (int(count), int(value))
    assert sum(board.counts) == 100


def test_the_board_id_is_the_sha256_of_its_canonical_judging_data() -> None:
    doc = board_file()
    canonical = {
        "premiums": [" ".join(row.split()) for row in doc["premiums"]],
        "tiles": doc["tiles"],
    }
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"))
    assert default_board().id == hashlib.sha256(text.encode()).hexdigest()


def test_only_judging_data_changes_the_board_id() -> None:
    doc = board_file()
    renamed = Board.from_mapping(doc | {"name": "other", "description": "reworded"})
    assert renamed.id == default_board().id
    premiums = list(doc["premiums"])
    premiums[0] = premiums[0].replace("TW", "DW", 1)
    assert Board.from_mapping(doc | {"premiums": premiums}).id != default_board().id
    tiles = doc["tiles"] | {"Q": [1, 11]}
    assert Board.from_mapping(doc | {"tiles": tiles}).id != default_board().id


@pytest.mark.parametrize(
    "change",
    [
        {"premiums": ["."] * 14},
        {"premiums": [". " * 14] * 15},
        {"premiums": ["XX " + ". " * 14] * 15},
        {"tiles": {"A": [9, 1]}},
        {"tiles": "many"},
        {"tiles_q": None},
        {"tiles_value": -1},
        {"tiles_value": True},
        {"tiles_count": 2000},
        {"tiles_all": 1},
    ],
)
def test_a_bad_board_file_is_refused(change: dict[str, Any]) -> None:
    doc = board_file()
    tiles = dict(doc["tiles"])
    if "tiles_q" in change:
        del tiles["Q"]
    elif "tiles_value" in change:
        tiles["Q"] = [1, change["tiles_value"]]
    elif "tiles_count" in change:
        tiles["E"] = [change["tiles_count"], 1]
    elif "tiles_all" in change:
        tiles = {tile: [1, 1] for tile in tiles}  # 27 tiles: too few to deal four racks
    else:
        doc |= change
    doc["tiles"] = doc.get("tiles") if "tiles" in change else tiles
    with pytest.raises(BoardError):
        Board.from_mapping(doc)


def test_a_board_file_that_is_not_json_is_refused() -> None:
    for data in (b"{", b"[]", b"\xff"):
        with pytest.raises(BoardError):
            Board.from_json(data)
