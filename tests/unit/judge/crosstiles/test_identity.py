"""A Crosstiles log's identity: one key for every byte variant the verifier reads alike, another
key for anything it could judge differently, and one match for the same seed and players."""

from __future__ import annotations

import hashlib
import random
import re
import sys
from collections.abc import Callable
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import judge.crosstiles.identity as identity_module
from devstack.testing.hostile_logs import HOSTILE
from judge import Lexicon
from judge.crosstiles import Board, CrosstilesReport, generate, verify
from judge.crosstiles.generator import CORRUPTIONS, corrupt
from judge.crosstiles.identity import GameIdentity, canonical, identity
from tests.crosstiles_verifiers import VerifyFn
from tests.unit.judge.test_crosstiles_differential import NOISE, mutations

BOM = b"\xef\xbb\xbf"
EVERYTHING = {"exchanges": True, "passes": True, "timeouts": True}
# Two to four players; the games with every option hold exchanges, passes, missed deadlines,
# a removal, rack penalties and a going-out gain.
GAMES = [(2, {}, 0), (2, EVERYTHING, 1), (3, EVERYTHING, 2), (4, EVERYTHING, 3)]
HEX = re.compile(r"[0-9a-f]{64}")

examples = settings(max_examples=200, deadline=None)


@pytest.fixture(scope="module")
def games(lexicon: Lexicon, board: Board) -> list[bytes]:
    return [
        generate(players, f"identity-{players}-{n}", lexicon, board, rng_seed=n, **options)
        for players, options, n in GAMES
    ]


# -- reading logs ---------------------------------------------------------------------------


def lines_of(log: bytes) -> list[bytes]:
    return log.split(b"\n")[:-1] if log.endswith(b"\n") else log.split(b"\n")


def log_of(lines: list[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)


def first_move(lines: list[bytes]) -> int:
    return next(n for n, line in enumerate(lines) if line.lstrip(b" \t").startswith(b">"))


def kind(line: bytes) -> str:
    """The kind of a generated log's line (its fields are one space apart)."""
    if not line.startswith(b">"):
        return "pragma"
    fields = line.split(b" ")
    if fields[1].startswith(b"("):
        return "gain"
    if fields[2] == b"-":
        return "pass"
    if fields[2] == b"(timeout)":
        return "timeout"
    if fields[2].startswith(b"-"):
        return "exchange"
    if fields[2].startswith(b"("):
        return "penalty"
    return "placement"


def judged(report: CrosstilesReport) -> dict[str, object]:
    """Everything a report says but the number of the failing line (which counts every
    physical line, ignored ones too)."""
    found = report.to_json()
    if found["error"] is not None:
        del found["error"]["line"]
    return found


def assert_same_game(verifier: VerifyFn, original: bytes, variant: bytes, lexicon, board) -> None:
    assert identity(variant) == identity(original)
    before, after = verifier(original, lexicon, board), verifier(variant, lexicon, board)
    assert (after.valid, after.players, after.winners) == (
        before.valid,
        before.players,
        before.winners,
    )
    assert judged(after) == judged(before)


# -- the neutral variants: each one, in a fixed order, from a log with LF line ends -----------

NOTES = [b"#note a remark", b"  #note \xff\xfe not UTF-8", b"\t#notes", b"#note", b"#noteworthy"]
BLANKS = [b"", b" ", b"\t", b" \t  "]
SPACES = [b"  ", b"\t", b" \t ", b"   "]
PRAGMAS = [b"#event Club night, round 3", "#venue Café Zoë".encode(), b"#date 2026-12-03"]
FULL_NAMES = [b"", b"Someone Else", "Zoë “the tiler” Ng".encode(), b"x\ty"]


def with_header_reordered(log: bytes, rng: random.Random) -> bytes:
    lines = lines_of(log)
    end = first_move(lines)
    header = lines[1:end]
    # A header of equal lines (a mutation can make one) has no other order: shuffling it
    # again and again would never end.
    while len(set(header)) > 1 and header == lines[1:end]:
        rng.shuffle(header)
    return log_of([lines[0], *header, *lines[end:]])


def with_unknown_pragmas(log: bytes, rng: random.Random) -> bytes:
    lines = lines_of(log)
    for pragma in PRAGMAS:
        lines.insert(rng.randint(1, first_move(lines)), pragma)
    return log_of(lines)


def with_other_text_after_nicks(log: bytes, rng: random.Random) -> bytes:
    lines = lines_of(log)
    for n, line in enumerate(lines):
        if line.startswith(b"#player"):
            lines[n] = b" ".join([*line.split(b" ")[:2], rng.choice(FULL_NAMES)]).rstrip(b" ")
    return log_of(lines)


def with_leading_zeros(log: bytes, rng: random.Random) -> bytes:
    """Scores, points, totals and one-digit rows with a leading zero: read by value."""
    lines = lines_of(log)
    for n, line in enumerate(lines):
        if not line.startswith(b">"):
            continue
        fields = line.split(b" ")
        if kind(line) == "placement":
            fields[2] = re.sub(rb"^([A-O]?)([1-9])([A-O]?)$", rb"\g<1>0\2\3", fields[2])
        fields[-2:] = [re.sub(rb"([0-9]+)", rb"0\1", field) for field in fields[-2:]]
        lines[n] = b" ".join(fields)
    return log_of(lines)


def with_end_tiles_reordered(log: bytes, rng: random.Random) -> bytes:
    """Penalty and gain lines' tiles in another order: the verifier only counts them."""
    lines = lines_of(log)
    for n, line in enumerate(lines):
        if kind(line) in ("penalty", "gain"):
            lines[n] = re.sub(rb"[A-Z?]{2,}", lambda m: bytes(sorted(m[0], reverse=True)), line)
    return log_of(lines)


def with_wider_spacing(log: bytes, rng: random.Random) -> bytes:
    lines = lines_of(log)
    for n, line in enumerate(lines):
        fields = line.split(b" ")
        spaced = fields[0] + b"".join(rng.choice(SPACES) + field for field in fields[1:])
        lines[n] = rng.choice(BLANKS) + spaced + rng.choice(BLANKS)
    return log_of(lines)


def with_blank_lines(log: bytes, rng: random.Random) -> bytes:
    return _sprinkled(log, BLANKS, rng)


def with_note_lines(log: bytes, rng: random.Random) -> bytes:
    return _sprinkled(log, NOTES, rng)


def _sprinkled(log: bytes, extra: list[bytes], rng: random.Random) -> bytes:
    """Lines from ``extra`` first, last, in the header, among the turns and at random."""
    lines = lines_of(log)
    at = {0, 2, first_move(lines) + 1, len(lines)} | {rng.randint(0, len(lines)) for _ in range(9)}
    for n in sorted(at, reverse=True):
        lines.insert(n, rng.choice(extra))
    return log_of(lines)


def with_crlf_endings(log: bytes, rng: random.Random) -> bytes:
    return log.replace(b"\n", b"\r\n")


def without_the_last_newline(log: bytes, rng: random.Random) -> bytes:
    return log.removesuffix(b"\n")


def with_a_byte_order_mark(log: bytes, rng: random.Random) -> bytes:
    return BOM + log


Variant = Callable[[bytes, random.Random], bytes]
VARIANTS: list[Variant] = [  # in the order they can be combined
    with_header_reordered,
    with_unknown_pragmas,
    with_other_text_after_nicks,
    with_leading_zeros,
    with_end_tiles_reordered,
    with_wider_spacing,
    with_blank_lines,
    with_note_lines,
    with_crlf_endings,
    without_the_last_newline,
    with_a_byte_order_mark,
]


def combined(log: bytes, variants: list[Variant], rng: random.Random) -> bytes:
    for variant in VARIANTS:
        if variant in variants:
            log = variant(log, rng)
    return log


def check_variant(variant: Variant, verifier, games, lexicon, board) -> None:
    """The variant of every game is the same game; it changes the bytes of some (an end line
    with one tile cannot be reordered)."""
    changed = 0
    for n, log in enumerate(games):
        other = variant(log, random.Random(n))
        assert_same_game(verifier, log, other, lexicon, board)
        changed += other != log
    assert changed


def test_a_log_with_a_byte_order_mark_is_the_same_game(verifier, games, lexicon, board) -> None:
    check_variant(with_a_byte_order_mark, verifier, games, lexicon, board)


def test_a_log_with_crlf_endings_is_the_same_game(verifier, games, lexicon, board) -> None:
    check_variant(with_crlf_endings, verifier, games, lexicon, board)


def test_a_log_with_lf_and_crlf_endings_mixed_is_the_same_game(
    verifier, games, lexicon, board
) -> None:
    for log in games:
        mixed = b"".join(
            line + (b"\r\n" if n % 2 else b"\n") for n, line in enumerate(lines_of(log))
        )
        assert_same_game(verifier, log, mixed, lexicon, board)


def test_a_log_without_its_last_newline_is_the_same_game(verifier, games, lexicon, board) -> None:
    check_variant(without_the_last_newline, verifier, games, lexicon, board)


def test_a_log_with_blank_lines_anywhere_is_the_same_game(verifier, games, lexicon, board) -> None:
    check_variant(with_blank_lines, verifier, games, lexicon, board)


def test_a_log_with_note_lines_anywhere_is_the_same_game(verifier, games, lexicon, board) -> None:
    check_variant(with_note_lines, verifier, games, lexicon, board)


def test_a_log_with_unknown_pragmas_is_the_same_game(verifier, games, lexicon, board) -> None:
    check_variant(with_unknown_pragmas, verifier, games, lexicon, board)


def test_a_log_without_its_informational_pragma_is_the_same_game(
    verifier, games, lexicon, board
) -> None:
    for log in games:
        assert b"#lexicon crosstiles\n" in log
        assert_same_game(verifier, log, log.replace(b"#lexicon crosstiles\n", b""), lexicon, board)


def test_a_log_with_other_text_after_a_nick_is_the_same_game(
    verifier, games, lexicon, board
) -> None:
    check_variant(with_other_text_after_nicks, verifier, games, lexicon, board)


def test_a_log_with_wider_spacing_between_fields_is_the_same_game(
    verifier, games, lexicon, board
) -> None:
    check_variant(with_wider_spacing, verifier, games, lexicon, board)


def test_a_header_in_another_order_is_the_same_game(verifier, games, lexicon, board) -> None:
    check_variant(with_header_reordered, verifier, games, lexicon, board)


def test_numbers_and_positions_with_leading_zeros_are_the_same_game(
    verifier, games, lexicon, board
) -> None:
    check_variant(with_leading_zeros, verifier, games, lexicon, board)


def test_end_line_tiles_in_another_order_are_the_same_game(verifier, games, lexicon, board) -> None:
    check_variant(with_end_tiles_reordered, verifier, games, lexicon, board)


def test_a_log_with_every_variant_at_once_is_the_same_game(verifier, games, lexicon, board) -> None:
    for n, log in enumerate(games):
        variant = combined(log, VARIANTS, random.Random(n))
        assert_same_game(verifier, log, variant, lexicon, board)


@examples
@given(data=st.data())
def test_the_neutral_variants_in_any_combination_keep_the_key(games, data) -> None:
    log = data.draw(st.sampled_from(games))
    variants = data.draw(st.lists(st.sampled_from(VARIANTS), unique=True))
    variant = combined(log, variants, random.Random(data.draw(st.integers(0, 2**32))))
    assert identity(variant) == identity(log)


# -- what changes the key ---------------------------------------------------------------------


def _bump(field: bytes) -> bytes:
    """A number one further from zero, its sign kept."""
    sign = field[:1] if field[:1] in (b"+", b"-") else b""
    return sign + b"%d" % (abs(int(field)) + 1)


def _other_tile(tiles: bytes) -> bytes:
    return (b"B" if tiles[:1] == b"A" else b"A") + tiles[1:]


def _swap_position(position: bytes) -> bytes:
    """8H (across) as H8 (down), and back."""
    return position[-1:] + position[:-1]


def _flip_case(play: bytes) -> bytes:
    spot = next(n for n, byte in enumerate(play) if chr(byte).isalpha())
    return play[:spot] + play[spot : spot + 1].swapcase() + play[spot + 1 :]


# The kind of line changed, and the change to its fields.
FIELD_CHANGES: dict[str, tuple[str, Callable[[list[bytes]], None]]] = {
    "a placement's score": ("placement", lambda f: f.__setitem__(4, _bump(f[4]))),
    "a placement's total": ("placement", lambda f: f.__setitem__(5, _bump(f[5]))),
    "a placement's word": ("placement", lambda f: f.__setitem__(3, _flip_case(f[3]))),
    "a placement's position": ("placement", lambda f: f.__setitem__(2, _swap_position(f[2]))),
    "a turn's rack": ("placement", lambda f: f.__setitem__(1, _other_tile(f[1]))),
    "the nick on a turn": ("placement", lambda f: f.__setitem__(0, f[0].swapcase())),
    "an exchange's tiles": ("exchange", lambda f: f.__setitem__(2, b"-" + _other_tile(f[2][1:]))),
    "a pass made a missed deadline": ("pass", lambda f: f.__setitem__(2, b"(timeout)")),
    "a missed deadline made a pass": ("timeout", lambda f: f.__setitem__(2, b"-")),
    "a rack penalty's points": ("penalty", lambda f: f.__setitem__(3, _bump(f[3]))),
    "a rack penalty's total": ("penalty", lambda f: f.__setitem__(4, _bump(f[4]))),
    "a going-out gain": ("gain", lambda f: f.__setitem__(2, _bump(f[2]))),
}


@pytest.mark.parametrize("change", sorted(FIELD_CHANGES))
def test_changing_one_field_of_a_line_changes_the_key_but_not_the_match(games, change) -> None:
    line_kind, edit = FIELD_CHANGES[change]
    changed = 0
    for log in games:
        lines = lines_of(log)
        n = next((n for n, line in enumerate(lines) if kind(line) == line_kind), None)
        if n is None:
            continue
        fields = lines[n].split(b" ")
        edit(fields)
        lines[n] = b" ".join(fields)
        other = log_of(lines)
        assert other != log
        assert identity(other).key != identity(log).key, change
        assert identity(other).match == identity(log).match
        changed += 1
    assert changed, f"no game has a {line_kind} line"


def _swap_turns(lines: list[bytes]) -> None:
    n = first_move(lines)
    lines[n], lines[n + 1] = lines[n + 1], lines[n]


LINE_CHANGES: dict[str, Callable[[list[bytes]], object]] = {
    "a turn dropped": lambda lines: lines.pop(first_move(lines) + 1),
    "two turns swapped": _swap_turns,
    "an end line dropped": lambda lines: lines.pop(),
    "a line after the end": lambda lines: lines.append(b"junk"),
    "a move line after the end": lambda lines: lines.append(lines[-1]),
    "a pragma after the first move line": lambda lines: lines.insert(-1, b"#event x"),
}


@pytest.mark.parametrize("change", sorted(LINE_CHANGES))
def test_changing_the_turns_changes_the_key_but_not_the_match(games, change) -> None:
    for log in games:
        lines = lines_of(log)
        LINE_CHANGES[change](lines)
        other = log_of(lines)
        assert identity(other).key != identity(log).key
        assert identity(other).match == identity(log).match


def test_another_game_with_the_same_seed_and_players_has_the_same_match(lexicon, board) -> None:
    one = generate(3, "same-seed", lexicon, board, rng_seed=1, **EVERYTHING)
    two = generate(3, "same-seed", lexicon, board, rng_seed=2, **EVERYTHING)
    assert one != two
    assert identity(one).key != identity(two).key
    assert identity(one).match == identity(two).match is not None


def test_a_different_seed_is_another_game_and_another_match(games) -> None:
    for log in games:
        other = re.sub(rb"#seed (\S+)", rb"#seed \1x", log)
        assert identity(other).key != identity(log).key
        assert identity(other).match != identity(log).match


def test_the_players_in_another_order_are_another_game_and_another_match(games) -> None:
    swap = {b"ann": b"bob", b"bob": b"ann"}
    for log in games:
        other = re.sub(
            rb"#player([12]) (ann|bob)", lambda m: b"#player%s %s" % (m[1], swap[m[2]]), log
        )
        assert b"#player1 bob" in other and b"#player2 ann" in other
        assert identity(other).key != identity(log).key
        assert identity(other).match != identity(log).match is not None


def test_a_nick_in_another_case_is_another_game_and_another_match(games) -> None:
    for log in games:
        other = log.replace(b"#player1 ann", b"#player1 Ann").replace(b">ann:", b">Ann:")
        assert identity(other).key != identity(log).key
        assert identity(other).match != identity(log).match is not None


def test_a_seed_in_another_case_is_another_game_and_another_match(games) -> None:
    for log in games:
        other = log.replace(b"#seed identity", b"#seed IDENTITY")
        assert other != log
        assert identity(other).key != identity(log).key
        assert identity(other).match != identity(log).match


def test_a_repeated_unknown_pragma_is_another_game(verifier, games, lexicon, board) -> None:
    """The verifier reads a valid informational pragma as nothing, but a second one with the
    same name makes the log malformed: that one is kept."""
    for log in games:
        once = log.replace(b"#lexicon crosstiles\n", b"#lexicon crosstiles\n#event a\n")
        twice = once.replace(b"#event a\n", b"#event a\n#event a\n")
        assert identity(once) == identity(log)
        assert identity(twice).key != identity(once).key
        assert identity(twice).match is None
        assert verifier(once, lexicon, board).valid
        assert not verifier(twice, lexicon, board).valid


def test_text_after_a_nick_that_is_not_utf8_is_another_game(
    verifier, games, lexicon, board
) -> None:
    for log in games:
        bad = log.replace(b"#player1 ann Bot Ann", b"#player1 ann Bot \xff")
        assert identity(bad).key != identity(log).key
        assert identity(bad).match is None
        assert not verifier(bad, lexicon, board).valid


def test_a_wrong_rack_is_kept_as_written_because_the_report_quotes_it(
    verifier, games, lexicon, board
) -> None:
    log = games[0]
    lines = lines_of(log)
    n = first_move(lines)
    fields = lines[n].split(b" ")
    wrong = _other_tile(fields[1])
    reports, keys = set(), set()
    for rack in (wrong, wrong[::-1]):
        lines[n] = b" ".join([fields[0], rack, *fields[2:]])
        report = verifier(log_of(lines), lexicon, board)
        assert report.error is not None and report.error.reason == "rack_mismatch"
        reports.add(report.error.detail)
        keys.add(identity(log_of(lines)).key)
    assert len(reports) == len(keys) == 2


def test_a_position_off_the_board_is_kept_as_written_because_the_report_quotes_it(
    verifier, games, lexicon, board
) -> None:
    lines = lines_of(games[0])
    n = first_move(lines)
    fields = lines[n].split(b" ")
    details, keys = set(), set()
    for position in (b"8P", b"08P"):
        lines[n] = b" ".join([*fields[:2], position, *fields[3:]])
        report = verifier(log_of(lines), lexicon, board)
        assert report.error is not None and report.error.reason == "off_board"
        details.add(report.error.detail)
        keys.add(identity(log_of(lines)).key)
    assert len(details) == len(keys) == 2


# -- logs without a readable header -----------------------------------------------------------

HEAD = b"#crosstiles 1\n#seed s\n#player1 ann\n#player2 bob\n"
UNREADABLE = {
    "nothing": b"",
    "junk": b"junk\n",
    "no dialect pragma": b"#seed s\n#player1 ann\n#player2 bob\n>ann: A - +0 0\n",
    "another dialect": HEAD.replace(b"#crosstiles 1", b"#crosstiles 2"),
    "no seed": HEAD.replace(b"#seed s\n", b""),
    "one player": HEAD.replace(b"#player2 bob\n", b""),
    "a gap in the players": HEAD.replace(b"#player2", b"#player3"),
    "a repeated pragma": HEAD + b"#event a\n#event b\n",
    "a pragma without a value": HEAD + b"#event\n",
    "a pragma that is not UTF-8": HEAD + b"#event \xff\n",
    "a nick taken twice": HEAD + b"#player3 ann\n",
    "a move line first": b">ann: A - +0 0\n" + HEAD,
}


@pytest.mark.parametrize("case", sorted(UNREADABLE))
def test_a_log_without_a_readable_header_has_no_match(verifier, lexicon, board, case) -> None:
    data = UNREADABLE[case]
    found = identity(data)
    assert HEX.fullmatch(found.key)
    assert found.match is None
    assert verifier(data, lexicon, board).players == ()


def test_a_complete_header_without_turns_has_a_match(verifier, lexicon, board) -> None:
    found = identity(HEAD)
    assert found.match is not None
    assert verifier(HEAD, lexicon, board).players != ()


def test_a_log_without_a_readable_header_is_still_normalised(
    verifier, games, lexicon, board
) -> None:
    for log in games:
        broken = log.replace(b"#crosstiles 1", b"#crosstiles 2")
        assert identity(broken).match is None
        for variant in (with_crlf_endings, with_a_byte_order_mark, with_blank_lines):
            assert_same_game(verifier, broken, variant(broken, random.Random(0)), lexicon, board)
        for variant in (with_note_lines, with_wider_spacing, without_the_last_newline):
            assert_same_game(verifier, broken, variant(broken, random.Random(0)), lexicon, board)
        assert identity(broken).key != identity(log).key


# -- the canonical form -----------------------------------------------------------------------


def test_the_canonical_form_is_versioned_and_is_what_the_key_hashes(games) -> None:
    log = games[0]
    seed = re.search(rb"#seed (\S+)", log)[1]
    head = b"#crosstiles 1\n#seed " + seed + b"\n#player1 ann\n#player2 bob\n"
    form = canonical(log)
    assert form.startswith(b"crosstiles-identity-1\n" + head + b">ann: ")
    assert b"#lexicon" not in form and b"Bot" not in form
    assert identity(log).key == hashlib.sha256(form).hexdigest()
    assert identity(log).match == hashlib.sha256(b"crosstiles-match-1\n" + head).hexdigest()
    assert canonical(canonical(log).removeprefix(b"crosstiles-identity-1\n")) == form


def as_log(form: bytes) -> bytes:
    """A canonical form read back as a log: its lines with CRLF ends, after a BOM, so that a
    line's own last '\\r' or first BOM is not the one the verifier drops."""
    lines = form.split(b"\n")
    assert lines[0] == b"crosstiles-identity-1" and lines[-1] == b""
    return BOM + b"".join(line + b"\r\n" for line in lines[1:-1])


# Header lines, good and bad, informational ones, repeated or not, and move lines.
PRAGMA_LINES = [
    *HEAD.split(b"\n"),
    b"#crosstiles 1",
    b"\t#seed  s ",
    b"#player1 ann Ann \xff",
    b"#player2 bob\tBob  Example",
    b"#player3 cy",
    b"#player01 cy",
    b"#players 3",
    b"#event a",
    b"#event  b\t",
    b"#lexicon",
    b"#",
    b">ann: AAAAAAA 08H AA +02 02",
    b">bob: AAAAAAA (AAAAAAA) -07 -7",
]
noisy_logs = st.lists(
    st.one_of(st.sampled_from(NOISE), st.sampled_from(PRAGMA_LINES), st.binary(max_size=20)),
    max_size=20,
).map(b"\n".join)


@st.composite
def logs(draw: st.DrawFn, games: list[bytes]) -> bytes:
    """Generated games, their corruptions and mutations, in any neutral variant, and noise."""
    log = draw(st.sampled_from(games))
    rng = random.Random(draw(st.integers(0, 2**32)))
    choice = draw(st.integers(0, 4))
    if choice == 0:
        log = corrupt(log, draw(st.sampled_from(sorted(CORRUPTIONS))), rng)
    elif choice == 1:
        log = draw(mutations(log))
    elif choice == 2:
        return draw(st.one_of(st.binary(max_size=300), noisy_logs))
    variants = draw(st.lists(st.sampled_from(VARIANTS), unique=True))
    try:
        return combined(log, variants, rng)
    except (StopIteration, ValueError, IndexError):  # a mutation left no header or move line
        return log


@examples
@given(data=st.data())
def test_the_canonical_form_is_judged_like_the_log(games, lexicon, board, data) -> None:
    """What makes merging safe: the canonical form, read back as a log, gets the same report as
    the log itself but for line numbers, so two logs with one form get the same report."""
    log = data.draw(logs(games))
    form = canonical(log)
    assert judged(verify(as_log(form), lexicon, board)) == judged(verify(log, lexicon, board))
    assert identity(log).key == hashlib.sha256(form).hexdigest()


def verifier_lines(data: bytes) -> list[bytes]:
    """The lines ``engine.verify`` judges, by a copy of its loop, fields one space apart."""
    found = []
    size = len(data)
    start = 3 if data.startswith(BOM) else 0
    while start < size:
        end = data.find(b"\n", start)
        if end < 0:
            end = size
        line = data[start:end]
        start = end + 1
        if line.endswith(b"\r"):
            line = line[:-1]
        stripped = line.strip(b" \t")
        if not stripped or stripped.startswith(b"#note"):
            continue
        found.append(b" ".join(re.split(rb"[ \t]+", stripped)))
    return found


PIECES = [b" ", b"\t", b"\r", b"\n", b"\r\n", b"#note", b"#", b">", b"a", b"\xff", b"\x00", BOM]


@examples
@given(data=st.lists(st.sampled_from(PIECES), max_size=40).map(b"".join))
def test_lines_are_split_and_skipped_as_the_verifier_does(data: bytes) -> None:
    for block in (1, 2, 5, 1 << 16):
        with mock.patch.object(identity_module, "_BLOCK", block):
            lines = [line for part in identity_module._judged_blocks(data) for line in part]
        assert lines == verifier_lines(data)


# -- hostile bytes ----------------------------------------------------------------------------

# Function calls made (Python functions and the built-ins they call) for an identity: a few
# for the whole upload, a few for each block of lines, one or two for each line it keeps.
# Counted, not timed: how long the same work takes is `python -m benchmarks.crosstiles_identity`.
CALLS_FIXED, CALLS_A_LINE = 200, 4


def calls_made(work: Callable[[], object]) -> int:
    """How many function calls `work` makes, as the profiler sees them."""
    made = 0

    def count(frame: object, event: str, arg: object) -> None:
        nonlocal made
        if event in ("call", "c_call"):
            made += 1

    sys.setprofile(count)
    try:
        work()
    finally:
        sys.setprofile(None)
    return made


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_bytes_give_an_identity_in_work_bounded_by_their_lines(case) -> None:
    """No step is taken a byte at a time, or a line at a time more than a few times over: a
    5 MB line costs what a short one does, in calls."""
    data = HOSTILE[case]()
    found: list[GameIdentity] = []
    calls = calls_made(lambda: found.append(identity(data)))
    lines = data.count(b"\n") + 1
    assert calls <= CALLS_FIXED + CALLS_A_LINE * lines, (calls, lines)
    assert HEX.fullmatch(found[0].key)
    assert found[0].match is None or HEX.fullmatch(found[0].match)


@examples
@given(data=st.one_of(st.binary(max_size=2000), noisy_logs))
def test_any_bytes_give_an_identity(lexicon, board, data: bytes) -> None:
    found = identity(data)
    assert HEX.fullmatch(found.key)
    assert found.match is None or HEX.fullmatch(found.match)
    assert (found.match is None) == (verify(data, lexicon, board).players == ())
