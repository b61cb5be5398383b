"""C2SP signed notes with Ed25519 keys, in the formats of Go's golang.org/x/mod/sumdb/note: the
signer and verifier key strings, signing a text, and opening a signed note against the verifier
keys a reader trusts.

A signed note is the text (ending in a newline), a blank line, then one line per signature:
`— <key name> <base64(key hash ‖ signature)>`. The key hash is the first four bytes of
SHA-256(name ‖ "\\n" ‖ 0x01 ‖ public key); it names the key, it does not authenticate it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

# Notes come from the network: bound the work one can cost. C2SP asks readers to accept at
# least 16 signatures; Go's reader stops at 100.
MAX_NOTE_SIZE = 1 << 20
MAX_SIGNATURES = 100
ED25519 = 1  # the algorithm byte that starts an encoded key
_SIGNATURE_PREFIX = "\N{EM DASH} "
_KEY_HASH = re.compile(r"[0-9a-f]{8}")


class NoteError(ValueError):
    """A note or key is malformed, or its signatures do not verify."""


@dataclass(frozen=True)
class Signature:
    """One signature line of a note: the key's name and hash, and the signature as written."""

    name: str
    key_hash: int
    base64: str


class Note(NamedTuple):
    """An opened note: its text, and the signatures by known keys, all verified."""

    text: str
    signatures: tuple[Signature, ...]


def _valid_name(name: str) -> bool:
    """Key names are non-empty and hold no Unicode space, no plus and no control character."""
    return bool(name) and "+" not in name and not any(c.isspace() or c < " " for c in name)


def _key_hash(name: str, public_key: bytes) -> int:
    digest = hashlib.sha256(name.encode() + b"\n" + bytes([ED25519]) + public_key).digest()
    return int.from_bytes(digest[:4], "big")


def _decode_base64(text: str) -> bytes | None:
    """The bytes of canonical standard base64 (padded, no stray bits), else None."""
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    return data if base64.b64encode(data).decode() == text else None


def _encode_base64(data: bytes) -> str:
    return base64.b64encode(data).decode()


class Verifier:
    """An Ed25519 public key with its name: checks signatures made by the matching Signer."""

    def __init__(self, name: str, public_key: bytes) -> None:
        if not _valid_name(name):
            raise NoteError(f"invalid key name {name[:100]!r}")
        if len(public_key) != 32:
            raise NoteError(f"an Ed25519 public key has 32 bytes, not {len(public_key)}")
        self.name = name
        self.key_hash = _key_hash(name, public_key)
        self.public_key = public_key
        self._key = Ed25519PublicKey.from_public_bytes(public_key)

    @classmethod
    def from_key(cls, verifier_key: str) -> Verifier:
        """The verifier a key string `<name>+<hash hex>+<base64(0x01 ‖ public key)>` encodes."""
        parts = verifier_key.split("+", 2)
        if len(parts) != 3:
            raise NoteError("malformed verifier key: not <name>+<hash>+<key>")
        name, hash_hex, key_base64 = parts
        key = _decode_base64(key_base64)
        if not _KEY_HASH.fullmatch(hash_hex) or not key or not _valid_name(name):
            raise NoteError("malformed verifier key")
        if key[0] != ED25519 or len(key) != 33:
            raise NoteError("the verifier key is not an Ed25519 key")
        verifier = cls(name, key[1:])
        if verifier.key_hash != int(hash_hex, 16):
            raise NoteError("the verifier key's hash does not match its name and key")
        return verifier

    @property
    def key(self) -> str:
        """This verifier's key string, as published for readers to pin."""
        encoded = _encode_base64(bytes([ED25519]) + self.public_key)
        return f"{self.name}+{self.key_hash:08x}+{encoded}"

    def verify(self, message: bytes, signature: bytes) -> bool:
        try:
            self._key.verify(signature, message)
        except InvalidSignature:
            return False
        return True


class Signer:
    """An Ed25519 private key with its name. Its key string is a secret."""

    def __init__(self, name: str, seed: bytes) -> None:
        if len(seed) != 32:
            raise NoteError(f"an Ed25519 private key seed has 32 bytes, not {len(seed)}")
        self._key = Ed25519PrivateKey.from_private_bytes(seed)
        self.verifier = Verifier(name, self._key.public_key().public_bytes_raw())
        self.name = name
        self.key_hash = self.verifier.key_hash

    @classmethod
    def from_key(cls, signer_key: str) -> Signer:
        """The signer a key string `PRIVATE+KEY+<name>+<hash hex>+<base64(0x01 ‖ seed)>`
        encodes. Errors never quote the key."""
        parts = signer_key.split("+", 4)
        if len(parts) != 5 or parts[:2] != ["PRIVATE", "KEY"]:
            raise NoteError("malformed signer key: not PRIVATE+KEY+<name>+<hash>+<key>")
        _, _, name, hash_hex, key_base64 = parts
        key = _decode_base64(key_base64)
        if not _KEY_HASH.fullmatch(hash_hex) or not key:
            raise NoteError("malformed signer key")
        if not _valid_name(name):
            raise NoteError("malformed signer key: invalid key name")
        if key[0] != ED25519 or len(key) != 33:
            raise NoteError("the signer key is not an Ed25519 key")
        signer = cls(name, key[1:])
        if signer.key_hash != int(hash_hex, 16):
            raise NoteError("the signer key's hash does not match its name and key")
        return signer

    def sign(self, message: bytes) -> bytes:
        return self._key.sign(message)


def generate_key(name: str) -> tuple[str, str]:
    """A new key pair for the key name: (signer key, verifier key), as Go's GenerateKey."""
    if not _valid_name(name):
        raise NoteError(f"invalid key name {name[:100]!r}")
    seed = Ed25519PrivateKey.generate().private_bytes_raw()
    signer = Signer(name, seed)
    encoded = _encode_base64(bytes([ED25519]) + seed)
    return f"PRIVATE+KEY+{name}+{signer.key_hash:08x}+{encoded}", signer.verifier.key


_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f]")


def _check_characters(text: str) -> None:
    """Notes are UTF-8 without control characters other than the newline."""
    if _CONTROL.search(text):
        raise NoteError("malformed note: it holds a control character")
    try:
        size = len(text.encode())
    except UnicodeEncodeError:
        raise NoteError("malformed note: it is not valid Unicode") from None
    if size > MAX_NOTE_SIZE:
        raise NoteError(f"the note is larger than {MAX_NOTE_SIZE} bytes")


def sign(text: str, *signers: Signer) -> str:
    """The signed note of the text (which ends in a newline) with one line per signer."""
    if not signers:
        raise ValueError("a note needs at least one signer")
    if not text.endswith("\n"):
        raise NoteError("a note's text ends with a newline")
    _check_characters(text)
    message = text.encode()
    lines = []
    for signer in signers:
        signature = signer.key_hash.to_bytes(4, "big") + signer.sign(message)
        lines.append(f"{_SIGNATURE_PREFIX}{signer.name} {_encode_base64(signature)}\n")
    return text + "\n" + "".join(lines)


def open_note(msg: str | bytes, verifiers: Iterable[Verifier]) -> Note:
    """The note's text and its verified signatures. Signatures by unknown keys are ignored; a
    known key's bad signature, a note no known key signed, or a malformed note raise NoteError.
    """
    if len(msg) > MAX_NOTE_SIZE:  # before decoding: a str's UTF-8 is no shorter
        raise NoteError(f"the note is larger than {MAX_NOTE_SIZE} bytes")
    if isinstance(msg, bytes):
        try:
            msg = msg.decode()
        except UnicodeDecodeError:
            raise NoteError("malformed note: it is not valid UTF-8") from None
    _check_characters(msg)
    split = msg.rfind("\n\n")
    if split < 0:
        raise NoteError("malformed note: no blank line before the signatures")
    text, block = msg[: split + 1], msg[split + 2 :]
    if not block.endswith("\n"):
        raise NoteError("malformed note: the signatures do not end with a newline")
    lines = block[:-1].split("\n")
    if len(lines) > MAX_SIGNATURES:
        raise NoteError(f"malformed note: more than {MAX_SIGNATURES} signatures")
    known = _by_name_and_hash(verifiers)
    message = text.encode()
    verified: dict[tuple[str, int], Signature] = {}
    unknown: list[str] = []
    for line in lines:
        signature, raw = _parse_signature_line(line)
        key = (signature.name, signature.key_hash)
        label = f"{signature.name}+{signature.key_hash:08x}"
        if key not in known:
            unknown.append(label)  # C2SP: signatures by unknown keys are ignored
        elif key not in verified:  # a key's repeated signature counts once, as in Go
            if not known[key].verify(message, raw[4:]):
                raise NoteError(f"invalid signature for key {label}")
            verified[key] = signature
    if not verified:
        by = ", ".join(dict.fromkeys(unknown[:3]))
        raise NoteError(f"the note has no signature by a known key (it is signed by {by})")
    return Note(text, tuple(verified.values()))


def _by_name_and_hash(verifiers: Iterable[Verifier]) -> dict[tuple[str, int], Verifier]:
    known: dict[tuple[str, int], Verifier] = {}
    for verifier in verifiers:
        label = (verifier.name, verifier.key_hash)
        if label in known and known[label].public_key != verifier.public_key:
            raise NoteError(f"two verifier keys are named {verifier.name}+{verifier.key_hash:08x}")
        known[label] = verifier
    return known


def _parse_signature_line(line: str) -> tuple[Signature, bytes]:
    """A signature line's signature, and its decoded bytes (key hash, then signature)."""
    if not line.startswith(_SIGNATURE_PREFIX):
        raise NoteError("malformed note: a signature line does not start with an em dash")
    name, _, encoded = line[len(_SIGNATURE_PREFIX) :].partition(" ")
    raw = _decode_base64(encoded)
    if raw is None or len(raw) < 5 or not _valid_name(name):
        raise NoteError("malformed note: a signature line is malformed")
    return Signature(name, int.from_bytes(raw[:4], "big"), encoded), raw
