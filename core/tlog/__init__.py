"""A transparency log, pure: no storage, network or clock of its own.

- `merkle`: RFC 6962 hashes, the stored-hash layout of Go's sumdb/tlog (a tree kept as one
  append-only sequence of hashes), tree hashes, inclusion and consistency proofs.
- `tiles`: the C2SP tlog-tiles layout a log is served in (hash tiles of 256, entry bundles),
  which tiles a tree of a given size has, and a reader that checks tiles against a signed root.
- `note`: C2SP signed notes with Ed25519, in the key and note formats of Go's sumdb/note.
- `checkpoint`: the C2SP tlog-checkpoint a log signs: origin, tree size, root hash.
The formats are cross-checked against Go's own packages in tests/crosscheck.
"""

from core.tlog.checkpoint import Checkpoint, open_checkpoint, sign_checkpoint
from core.tlog.merkle import (
    EMPTY_ROOT,
    HASH_SIZE,
    HashReader,
    InMemoryTree,
    ProofError,
    check_record,
    check_tree,
    leaf_hash,
    node_hash,
    prove_record,
    prove_tree,
    root,
    split_stored_hash_index,
    stored_hash_count,
    stored_hash_index,
    stored_hashes,
    tree_hash,
)
from core.tlog.note import (
    Note,
    NoteError,
    Signature,
    Signer,
    Verifier,
    generate_key,
    open_note,
    sign,
)
from core.tlog.tiles import (
    TILE_WIDTH,
    EntryBundle,
    Tile,
    TileHashReader,
    bundles_for,
    decode_bundle,
    encode_bundle,
    entries_path,
    parse_path,
    read_tile_data,
    tile_path,
    tiles_for,
)

__all__ = [
    "EMPTY_ROOT",
    "HASH_SIZE",
    "TILE_WIDTH",
    "Checkpoint",
    "EntryBundle",
    "HashReader",
    "InMemoryTree",
    "Note",
    "NoteError",
    "ProofError",
    "Signature",
    "Signer",
    "Tile",
    "TileHashReader",
    "Verifier",
    "bundles_for",
    "check_record",
    "check_tree",
    "decode_bundle",
    "encode_bundle",
    "entries_path",
    "generate_key",
    "leaf_hash",
    "node_hash",
    "open_checkpoint",
    "open_note",
    "parse_path",
    "prove_record",
    "prove_tree",
    "read_tile_data",
    "root",
    "sign",
    "sign_checkpoint",
    "split_stored_hash_index",
    "stored_hash_count",
    "stored_hash_index",
    "stored_hashes",
    "tile_path",
    "tiles_for",
    "tree_hash",
]
