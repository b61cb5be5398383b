"""C2SP tlog-checkpoint: the note text that names a log (its origin), a tree size and that
tree's root hash, and the signing and opening of it as a signed note."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable
from dataclasses import dataclass

from core.tlog.merkle import HASH_SIZE, MAX_TREE_SIZE
from core.tlog.note import Signer, Verifier, open_note, sign

_SIZE = re.compile(r"0|[1-9][0-9]{0,18}")
_CONTROL = re.compile(r"[\x00-\x1f]")


@dataclass(frozen=True)
class Checkpoint:
    """A log's signed claim: its first `size` entries hash to `root`. Extension lines are
    opaque and optional; C2SP advises against them, as monitors cannot audit them."""

    origin: str
    size: int
    root: bytes
    extensions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for line in (self.origin, *self.extensions):
            if not line or _CONTROL.search(line):
                raise ValueError(
                    f"a checkpoint line is empty or holds a control character: {line[:100]!r}"
                )
        if not 0 <= self.size <= MAX_TREE_SIZE:
            raise ValueError(f"checkpoint size {self.size} is out of range")
        if len(self.root) != HASH_SIZE:
            raise ValueError(f"a root hash has {HASH_SIZE} bytes, not {len(self.root)}")

    def format(self) -> str:
        """The note text: origin, size, base64 root, then any extension lines."""
        lines = [self.origin, str(self.size), base64.b64encode(self.root).decode()]
        return "".join(f"{line}\n" for line in (*lines, *self.extensions))

    @classmethod
    def parse(cls, text: str) -> Checkpoint:
        """The checkpoint a note text holds; ValueError unless it is exactly in the form `format`
        writes (no leading zeros, canonical base64, no empty line)."""
        if not text.endswith("\n"):
            raise ValueError("malformed checkpoint: it does not end with a newline")
        lines = text[:-1].split("\n")
        if len(lines) < 3:
            raise ValueError("malformed checkpoint: fewer than three lines")
        origin, size, encoded_root, *extensions = lines
        if not _SIZE.fullmatch(size):
            raise ValueError(f"malformed checkpoint: tree size {size[:30]!r}")
        try:
            root = base64.b64decode(encoded_root, validate=True)
        except (binascii.Error, ValueError):
            root = b""
        if len(root) != HASH_SIZE or base64.b64encode(root).decode() != encoded_root:
            raise ValueError(f"malformed checkpoint: root hash {encoded_root[:60]!r}")
        return cls(origin, int(size), root, tuple(extensions))


def sign_checkpoint(checkpoint: Checkpoint, signer: Signer) -> str:
    """The checkpoint as a signed note."""
    return sign(checkpoint.format(), signer)


def open_checkpoint(signed: str | bytes, verifiers: Iterable[Verifier], origin: str) -> Checkpoint:
    """The checkpoint in a signed note, once a known key's signature verifies and its origin is
    the expected one; NoteError or ValueError otherwise."""
    checkpoint = Checkpoint.parse(open_note(signed, verifiers).text)
    if checkpoint.origin != origin:
        raise ValueError(
            f"the checkpoint is for log {checkpoint.origin[:100]!r}, not {origin[:100]!r}"
        )
    return checkpoint
