"""Signed notes and checkpoints: Go's and C2SP's published keys and notes verify, notes round-trip,
and every way of breaking a key, a note or a checkpoint is refused with a NoteError or
ValueError that says what is wrong."""

from __future__ import annotations

import base64
import hashlib
import re

import pytest

from core.tlog import (
    Checkpoint,
    NoteError,
    Signature,
    Signer,
    Verifier,
    generate_key,
    open_checkpoint,
    open_note,
    sign,
    sign_checkpoint,
)
from core.tlog.note import MAX_NOTE_SIZE

# Go's golang.org/x/mod/sumdb/note (note.go's package doc and note_test.go, v0.7.0).
PETER_SIGNER = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
PETER = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
ENOCH = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop"
TEXT = (
    "If you think cryptography is the answer to your problem,\n"
    "then you don't know what your problem is.\n"
)
PETER_SIG = (
    "— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngot"
    "pRZb6KE6RyyBwJnAM=\n"
)
ENOCH_SIG = (
    "— EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox3"
    "3WWd1RvMc+QQ=\n"
)
# C2SP signed-note's example (signed-note.md, commit 5ba5ee830903e91240fc6f9f3a7a9293d49e69c9).
C2SP_KEY = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k"
C2SP_NOTE = (
    "This is an example message.\n\n— example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2O"
    "NncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n"
)
# C2SP tlog-checkpoint's example body (tlog-checkpoint.md, same commit).
C2SP_CHECKPOINT = (
    "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
)


def test_gos_published_note_verifies() -> None:
    note = open_note(TEXT + "\n" + PETER_SIG, [Verifier.from_key(PETER)])
    assert note.text == TEXT
    assert note.signatures == (Signature("PeterNeumann", 0xC74F20A3, PETER_SIG[15:-1]),)


def test_signing_with_gos_published_key_gives_gos_published_note() -> None:
    # Ed25519 signatures are deterministic, so the bytes must match.
    assert sign(TEXT, Signer.from_key(PETER_SIGNER)) == TEXT + "\n" + PETER_SIG


def test_gos_signer_key_derives_gos_verifier_key() -> None:
    signer = Signer.from_key(PETER_SIGNER)
    assert signer.verifier.key == PETER
    assert (signer.name, signer.key_hash) == ("PeterNeumann", 0xC74F20A3)


def test_c2sps_example_note_verifies() -> None:
    note = open_note(C2SP_NOTE, [Verifier.from_key(C2SP_KEY)])
    assert note.text == "This is an example message.\n"


def test_a_note_signed_by_two_keys_opens_with_either_and_reports_the_known_ones() -> None:
    msg = TEXT + "\n" + PETER_SIG + ENOCH_SIG
    peter, enoch = Verifier.from_key(PETER), Verifier.from_key(ENOCH)
    assert [s.name for s in open_note(msg, [peter]).signatures] == ["PeterNeumann"]
    assert [s.name for s in open_note(msg, [enoch]).signatures] == ["EnochRoot"]
    assert [s.name for s in open_note(msg, [peter, enoch]).signatures] == [
        "PeterNeumann",
        "EnochRoot",
    ]


def test_repeated_signatures_count_once_and_unknown_bad_ones_are_ignored() -> None:
    forged_enoch = ENOCH_SIG[:60] + "ABCD" + ENOCH_SIG[60:]
    msg = TEXT + "\n" + PETER_SIG + PETER_SIG + ENOCH_SIG + forged_enoch
    assert len(open_note(msg, [Verifier.from_key(PETER)]).signatures) == 1


def test_generated_keys_have_gos_forms_and_round_trip_a_note() -> None:
    signer_key, verifier_key = generate_key("tilejudge.example/contest-1")
    name, key_hash, encoded = verifier_key.split("+", 2)  # base64 may hold "+" too
    assert name == "tilejudge.example/contest-1"
    public = base64.b64decode(encoded)
    assert public[0] == 1 and len(public) == 33
    digest = hashlib.sha256(name.encode() + b"\n" + public).digest()
    assert key_hash == digest[:4].hex()
    assert signer_key.startswith(f"PRIVATE+KEY+{name}+{key_hash}+")
    assert len(base64.b64decode(signer_key.split("+", 4)[4])) == 33
    msg = sign("hello\n\nworld\n", Signer.from_key(signer_key))
    note = open_note(msg.encode(), [Verifier.from_key(verifier_key)])
    assert note.text == "hello\n\nworld\n"
    assert note.signatures[0].name == name


def test_a_note_signed_by_another_key_of_the_same_name_is_refused() -> None:
    signer_key, _ = generate_key("log.example")
    _, other_verifier_key = generate_key("log.example")
    msg = sign("text\n", Signer.from_key(signer_key))
    with pytest.raises(NoteError, match="no signature by a known key"):
        open_note(msg, [Verifier.from_key(other_verifier_key)])


def test_a_note_signed_under_an_unknown_name_is_refused_and_the_error_names_the_signer() -> None:
    with pytest.raises(NoteError, match=r"no signature by a known key .*EnochRoot\+af0cfe78"):
        open_note(TEXT + "\n" + ENOCH_SIG, [Verifier.from_key(PETER)])
    with pytest.raises(NoteError, match="no signature by a known key"):
        open_note(TEXT + "\n" + PETER_SIG, [])


def test_altered_text_fails_the_signature() -> None:
    altered = TEXT.replace("problem,", "problem;") + "\n" + PETER_SIG
    with pytest.raises(NoteError, match=r"invalid signature for key PeterNeumann\+c74f20a3"):
        open_note(altered, [Verifier.from_key(PETER)])


def test_an_altered_signature_by_a_known_key_fails_even_beside_a_good_one() -> None:
    bad = PETER_SIG[:60] + "ABCD" + PETER_SIG[60:]
    with pytest.raises(NoteError, match="invalid signature"):
        open_note(TEXT + "\n" + bad, [Verifier.from_key(PETER)])
    with pytest.raises(NoteError, match="invalid signature"):
        open_note(TEXT + "\n" + ENOCH_SIG + bad, [Verifier.from_key(PETER)])


def test_a_signature_with_a_flipped_bit_fails() -> None:
    msg = sign("text\n", Signer.from_key(PETER_SIGNER))
    prefix, encoded = msg.rsplit(" ", 1)
    raw = bytearray(base64.b64decode(encoded))
    raw[-1] ^= 0x01
    tampered = f"{prefix} {base64.b64encode(raw).decode()}\n"
    with pytest.raises(NoteError, match="invalid signature"):
        open_note(tampered, [Verifier.from_key(PETER)])


@pytest.mark.parametrize(
    "msg",
    [
        TEXT,  # no blank line, no signature
        TEXT + "\n",  # no signature
        TEXT + "\n" + PETER_SIG[:-1],  # no final newline
        "\x01" + TEXT + "\n" + PETER_SIG,  # control character
        "\t" + TEXT + "\n" + PETER_SIG,
        TEXT + "\n" + "— Bad Name " + PETER_SIG[15:],  # a space in the name
        TEXT + "\n" + "— Bad+Name " + PETER_SIG[15:],  # a plus in the name
        TEXT + "\n" + PETER_SIG + "Unexpected line.\n",
        TEXT + "\n" + PETER_SIG.replace("—", "-"),  # a hyphen, not an em dash
        TEXT + "\n" + PETER_SIG.replace("—", "–"),  # an en dash
        TEXT + "\n" + PETER_SIG.replace("— ", "—"),
        TEXT + "\n" + PETER_SIG.replace(" x08go", "  x08go"),
        TEXT + "\n" + PETER_SIG.replace("JnAM=", "JnAM"),  # unpadded base64
        TEXT + "\n" + PETER_SIG.replace("JnAM=", "JnAN="),  # stray bits in the padding
        TEXT + "\n" + "— PeterNeumann x08g\n",  # fewer than 5 bytes
        TEXT + "\n" + "— PeterNeumann \n",
        TEXT + "\n" + "— x08go/ZJkuBS9UG/Sffcv\n",  # no name
        TEXT + "\n" + PETER_SIG * 101,  # more than 100 signatures
        TEXT + "\r\n" + PETER_SIG,
    ],
)
def test_malformed_notes_are_refused(msg: str) -> None:
    with pytest.raises(NoteError, match="malformed note"):
        open_note(msg, [Verifier.from_key(PETER)])


def test_invalid_utf8_is_refused() -> None:
    msg = b"\xff" + (TEXT + "\n" + PETER_SIG).encode()
    with pytest.raises(NoteError, match="not valid UTF-8"):
        open_note(msg, [Verifier.from_key(PETER)])
    with pytest.raises(NoteError, match="not valid Unicode"):
        open_note("\ud800" + TEXT + "\n" + PETER_SIG, [Verifier.from_key(PETER)])


def test_a_note_over_the_size_limit_is_refused_before_it_is_parsed() -> None:
    huge = "x" * MAX_NOTE_SIZE + "\n\n" + PETER_SIG
    with pytest.raises(NoteError, match="larger than"):
        open_note(huge, [Verifier.from_key(PETER)])
    with pytest.raises(NoteError, match="larger than"):
        open_note(huge.encode(), [Verifier.from_key(PETER)])
    with pytest.raises(NoteError, match="larger than"):
        sign("é" * (MAX_NOTE_SIZE // 2 + 1) + "\n", Signer.from_key(PETER_SIGNER))


def test_two_different_keys_with_one_name_and_hash_are_refused_as_ambiguous() -> None:
    peter = Verifier.from_key(PETER)
    impostor = Verifier.from_key(ENOCH)
    impostor.name, impostor.key_hash = peter.name, peter.key_hash
    with pytest.raises(NoteError, match="two verifier keys"):
        open_note(TEXT + "\n" + PETER_SIG, [peter, impostor])
    assert open_note(TEXT + "\n" + PETER_SIG, [peter, Verifier.from_key(PETER)]).text == TEXT


@pytest.mark.parametrize("text", ["no newline", "a\x00b\n", "tab\tinside\n"])
def test_sign_refuses_text_no_reader_would_open(text: str) -> None:
    with pytest.raises(NoteError):
        sign(text, Signer.from_key(PETER_SIGNER))


def test_every_truncation_or_altered_character_of_a_verifier_key_is_refused() -> None:
    # As Go's TestNewVerifier: any proper substring, any character changed.
    for start in range(len(PETER) + 1):
        for end in range(start + 1, len(PETER) + 1):
            if (start, end) != (0, len(PETER)):
                with pytest.raises(NoteError):
                    Verifier.from_key(PETER[start:end])
    for i in range(len(PETER)):
        mangled = PETER[:i] + chr(ord(PETER[i]) + 1) + PETER[i + 1 :]
        with pytest.raises(NoteError):
            Verifier.from_key(mangled)


def test_every_truncation_or_altered_character_of_a_signer_key_is_refused() -> None:
    key = PETER_SIGNER
    for start in range(len(key) + 1):
        for end in range(start + 1, len(key) + 1):
            if (start, end) != (0, len(key)):
                with pytest.raises(NoteError):
                    Signer.from_key(key[start:end])
    for i in range(len(key)):
        with pytest.raises(NoteError):
            Signer.from_key(key[:i] + chr(ord(key[i]) + 1) + key[i + 1 :])


@pytest.mark.parametrize(
    ("key", "why"),
    [
        # Go's: a key of the wrong length (also in non-canonical base64, which Go's decoder
        # accepts), and an unknown algorithm, each with a matching hash.
        ("PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==", "malformed"),
        ("PeterNeumann+00000000+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWAA==", "Ed25519"),
        ("PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", "Ed25519"),
        ("PeterNeumann+C74F20A3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", "malformed"),
        ("PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", "hash"),
        ("PeterNeumann", "malformed"),
        ("", "malformed"),
    ],
)
def test_verifier_keys_that_are_not_valid_ed25519_keys_say_why(key: str, why: str) -> None:
    with pytest.raises(NoteError, match=why):
        Verifier.from_key(key)


def test_a_malformed_signer_key_error_does_not_quote_the_key() -> None:
    secret = PETER_SIGNER.replace("c74f20a3", "c74f20a4")
    with pytest.raises(NoteError) as caught:
        Signer.from_key(secret)
    assert "AYEKFALVF" not in str(caught.value)


@pytest.mark.parametrize("name", ["", "a b", "a+b", "tab\there", "nbsp\u00a0here"])
def test_key_names_with_spaces_or_pluses_are_refused(name: str) -> None:
    with pytest.raises(NoteError, match="invalid key name"):
        generate_key(name)


def test_a_checkpoint_formats_as_c2sp_shows_and_parses_back() -> None:
    checkpoint = Checkpoint.parse(C2SP_CHECKPOINT)
    assert checkpoint.origin == "example.com/behind-the-sofa"
    assert checkpoint.size == 20852163
    assert checkpoint.root == base64.b64decode("CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=")
    assert checkpoint.format() == C2SP_CHECKPOINT
    with_extensions = Checkpoint("o", 0, bytes(32), ("ext one", "ext two"))
    assert Checkpoint.parse(with_extensions.format()) == with_extensions


@pytest.mark.parametrize(
    "text",
    [
        C2SP_CHECKPOINT[:-1],  # no final newline
        "example.com/log\n12\n",  # no root
        "\n12\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n",  # empty origin
        "o\n012\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n",  # leading zero
        "o\n+12\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n",
        "o\n-1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n",
        "o\n 12\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n",
        "o\n١٢\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n",  # Arabic-Indic digits
        "o\n9223372036854775808\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n",  # > int64
        "o\n12\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I\n",  # unpadded
        "o\n12\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2J=\n",  # stray bits
        "o\n12\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jx\n",  # 30 bytes
        "o\n12\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n\n",  # empty extension line
    ],
)
def test_malformed_checkpoints_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="checkpoint"):
        Checkpoint.parse(text)


def test_a_signed_checkpoint_opens_only_with_its_key_and_its_origin() -> None:
    signer_key, verifier_key = generate_key("judge.example/c1")
    checkpoint = Checkpoint("judge.example/c1", 7, hashlib.sha256(b"root").digest())
    signed = sign_checkpoint(checkpoint, Signer.from_key(signer_key))
    verifier = Verifier.from_key(verifier_key)
    assert open_checkpoint(signed, [verifier], "judge.example/c1") == checkpoint
    with pytest.raises(ValueError, match=re.escape("not 'judge.example/c2'")):
        open_checkpoint(signed, [verifier], "judge.example/c2")
    with pytest.raises(NoteError):
        open_checkpoint(signed.replace("\n7\n", "\n8\n"), [verifier], "judge.example/c1")
