"""RFC 6962 Merkle tree hashing, proofs, and the dense "stored hash" layout of Go's
golang.org/x/mod/sumdb/tlog, from which tiles, tree hashes and proofs are all read.

A log stores, for each record n, the hashes `stored_hashes` returns: the record's leaf hash and
the hash of every complete subtree that record closes. `stored_hash_index` places each at one
position of a single append-only sequence, so any storage that can append and read by position
holds a whole tree. Everything else here reads earlier hashes back through a `HashReader`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

HASH_SIZE = 32
# RFC 6962 defines the empty tree's hash as SHA-256 of nothing (Go's tlog uses 32 zero bytes
# instead; C2SP checkpoints follow the RFC).
EMPTY_ROOT = hashlib.sha256(b"").digest()
# Tree sizes and indexes are int64 in Go and in the C2SP formats: refuse anything larger rather
# than loop over a number an attacker chose.
MAX_TREE_SIZE = (1 << 63) - 1

HashReader = Callable[[Sequence[int]], Sequence[bytes]]
"""Returns the stored hashes at the given stored-hash indexes, in order (Go's HashReader)."""


class ProofError(ValueError):
    """Data from a log does not check out: a proof, a tile or a root fails to verify."""


def leaf_hash(entry: bytes) -> bytes:
    """The RFC 6962 hash of a log entry: SHA-256(0x00 ‖ entry)."""
    return hashlib.sha256(b"\x00" + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """The RFC 6962 hash of an interior node: SHA-256(0x01 ‖ left ‖ right)."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def root(leaf_hashes: Sequence[bytes]) -> bytes:
    """The Merkle tree hash (RFC 6962 MTH) of the given leaf hashes, computed straight from the
    definition: independent of the stored-hash bookkeeping below, so each can check the other."""
    if not leaf_hashes:
        return EMPTY_ROOT
    if len(leaf_hashes) == 1:
        return leaf_hashes[0]
    split, _ = _max_pow2(len(leaf_hashes))
    return node_hash(root(leaf_hashes[:split]), root(leaf_hashes[split:]))


def _max_pow2(n: int) -> tuple[int, int]:
    """k, the largest power of 2 smaller than n (1 when n <= 2), and log2 k."""
    level = max((n - 1).bit_length() - 1, 0)
    return 1 << level, level


def _trailing_ones(n: int) -> int:
    """How many low bits of n are 1: the number of subtrees record n completes."""
    return ((n + 1) & -(n + 1)).bit_length() - 1


def stored_hash_index(level: int, n: int) -> int:
    """Where the n'th hash of the given tree level sits in the stored-hash sequence.

    Level L's n'th hash is stored right after level L+1's (2n+1)'th one; level 0's n'th hash
    at n + n/2 + n/4 + ... (Crosby and Wallach's layout, as Go's StoredHashIndex).
    """
    for _ in range(level):
        n = 2 * n + 1
    index = 0
    while n > 0:
        index += n
        n >>= 1
    return index + level


def split_stored_hash_index(index: int) -> tuple[int, int]:
    """The (level, n) a stored-hash index stands for: the inverse of `stored_hash_index`."""
    if index < 0:
        raise ValueError(f"negative stored hash index {index}")
    # stored_hash_index(0, n) < 2n, so the record that stored it is in [index/2, index/2+log2).
    n = index // 2
    index_n = stored_hash_index(0, n)
    while True:
        # Each record n adds 1 + trailing_ones(n) hashes.
        following = index_n + 1 + _trailing_ones(n)
        if following > index:
            break
        n += 1
        index_n = following
    level = index - index_n
    return level, n >> level


def stored_hash_count(n: int) -> int:
    """How many stored hashes a tree of n records has."""
    if n == 0:
        return 0
    return stored_hash_index(0, n - 1) + 1 + _trailing_ones(n - 1)


def stored_hashes(n: int, record_hash: bytes, read_hashes: HashReader) -> list[bytes]:
    """The hashes to append to storage when adding record n, whose leaf hash is record_hash:
    that hash, then one per subtree the record completes (read_hashes supplies the left
    siblings). Go's StoredHashesForRecordHash."""
    _check_size(n, "record index")
    completed = _trailing_ones(n)
    # Sorted order: the left sibling of the biggest completed subtree comes first.
    indexes = [stored_hash_index(i, (n >> i) - 1) for i in reversed(range(completed))]
    old = _read(read_hashes, indexes)
    hashes = [record_hash]
    current = record_hash
    for i in range(completed):
        current = node_hash(old[completed - 1 - i], current)
        hashes.append(current)
    return hashes


def tree_hash(n: int, read_hashes: HashReader) -> bytes:
    """The root hash of the tree of n records, from at most 1 + log2(n) stored hashes."""
    _check_size(n, "tree size")
    if n == 0:
        return EMPTY_ROOT
    hashes = _read(read_hashes, subtree_indexes(0, n))
    result, rest = _subtree_hash(0, n, hashes)
    assert not rest, "bad index math in tree_hash"
    return result


def prove_record(t: int, n: int, read_hashes: HashReader) -> list[bytes]:
    """The proof (RFC 6962 audit path, leaf side first) that the tree of size t holds record n."""
    if not 0 <= n < t <= MAX_TREE_SIZE:
        raise ValueError(f"no record {n} in a tree of size {t}")
    indexes = _leaf_proof_indexes(0, t, n)
    hashes = _read(read_hashes, indexes)
    proof, rest = _leaf_proof(0, t, n, hashes)
    assert not rest, "bad index math in prove_record"
    return proof


def check_record(proof: Sequence[bytes], t: int, th: bytes, n: int, h: bytes) -> None:
    """Raises ProofError unless the proof shows that the tree of size t with root th holds the
    record n with leaf hash h."""
    if not 0 <= n < t <= MAX_TREE_SIZE:
        raise ProofError(f"no record {n} in a tree of size {t}")
    _check_hashes(proof)
    if _run_record_proof(proof, 0, t, n, h) != th:
        raise ProofError(f"record {n} is not in the tree of size {t} with that root")


def prove_tree(t: int, n: int, read_hashes: HashReader) -> list[bytes]:
    """The proof (RFC 6962 consistency proof) that the tree of size t extends the tree of size
    n: both hold the same first n records."""
    if not 1 <= n <= t <= MAX_TREE_SIZE:
        raise ValueError(f"no consistency proof from size {n} to size {t}")
    indexes = _tree_proof_indexes(0, t, n)
    hashes = _read(read_hashes, indexes)
    proof, rest = _tree_proof(0, t, n, hashes)
    assert not rest, "bad index math in prove_tree"
    return proof


def check_tree(proof: Sequence[bytes], t: int, th: bytes, n: int, h: bytes) -> None:
    """Raises ProofError unless the proof shows that the tree of size t with root th extends
    the tree of size n with root h."""
    if not 1 <= n <= t <= MAX_TREE_SIZE:
        raise ProofError(f"no consistency proof from size {n} to size {t}")
    _check_hashes(proof)
    old, new = _run_tree_proof(proof, 0, t, n, h)
    if old != h or new != th:
        raise ProofError(f"the tree of size {t} does not extend the tree of size {n}")


def subtree_indexes(lo: int, hi: int) -> list[int]:
    """The stored-hash indexes of the complete subtrees that make up records [lo, hi), largest
    first: the hashes a tree hash is computed from."""
    need = []
    while lo < hi:
        k, level = _max_pow2(hi - lo + 1)
        assert lo & (k - 1) == 0, "bad math in subtree_indexes"
        need.append(stored_hash_index(level, lo >> level))
        lo += k
    return need


def _check_size(n: int, what: str) -> None:
    if not 0 <= n <= MAX_TREE_SIZE:
        raise ValueError(f"{what} {n} is out of range")


def _check_hashes(proof: Sequence[bytes]) -> None:
    # A proof deeper than any int64-sized tree cannot be right; stop before hashing it.
    if len(proof) > 64 or any(len(h) != HASH_SIZE for h in proof):
        raise ProofError("malformed proof")


def _read(read_hashes: HashReader, indexes: list[int]) -> Sequence[bytes]:
    if not indexes:
        return []
    hashes = read_hashes(indexes)
    if len(hashes) != len(indexes):
        raise ValueError(f"read_hashes({len(indexes)} indexes) returned {len(hashes)} hashes")
    return hashes


def _subtree_hash(lo: int, hi: int, hashes: Sequence[bytes]) -> tuple[bytes, Sequence[bytes]]:
    """The hash of records [lo, hi) from the hashes `subtree_indexes(lo, hi)` named, and the
    hashes left over."""
    count = len(subtree_indexes(lo, hi))
    result = hashes[count - 1]
    for i in range(count - 2, -1, -1):
        result = node_hash(hashes[i], result)
    return result, hashes[count:]


def _leaf_proof_indexes(lo: int, hi: int, n: int) -> list[int]:
    if lo + 1 == hi:
        return []
    k, _ = _max_pow2(hi - lo)
    if n < lo + k:
        return _leaf_proof_indexes(lo, lo + k, n) + subtree_indexes(lo + k, hi)
    return subtree_indexes(lo, lo + k) + _leaf_proof_indexes(lo + k, hi, n)


def _leaf_proof(
    lo: int, hi: int, n: int, hashes: Sequence[bytes]
) -> tuple[list[bytes], Sequence[bytes]]:
    if lo + 1 == hi:
        return [], hashes  # the verifier knows the leaf hash itself
    k, _ = _max_pow2(hi - lo)
    if n < lo + k:
        proof, hashes = _leaf_proof(lo, lo + k, n, hashes)
        sibling, hashes = _subtree_hash(lo + k, hi, hashes)
    else:
        sibling, hashes = _subtree_hash(lo, lo + k, hashes)
        proof, hashes = _leaf_proof(lo + k, hi, n, hashes)
    return [*proof, sibling], hashes


def _run_record_proof(proof: Sequence[bytes], lo: int, hi: int, n: int, leaf: bytes) -> bytes:
    """The root of records [lo, hi) that the proof implies, or ProofError."""
    if lo + 1 == hi:
        if proof:
            raise ProofError("the proof has more hashes than the tree needs")
        return leaf
    if not proof:
        raise ProofError("the proof has fewer hashes than the tree needs")
    k, _ = _max_pow2(hi - lo)
    if n < lo + k:
        return node_hash(_run_record_proof(proof[:-1], lo, lo + k, n, leaf), proof[-1])
    return node_hash(proof[-1], _run_record_proof(proof[:-1], lo + k, hi, n, leaf))


def _tree_proof_indexes(lo: int, hi: int, n: int) -> list[int]:
    if n == hi:
        return [] if lo == 0 else subtree_indexes(lo, hi)
    k, _ = _max_pow2(hi - lo)
    if n <= lo + k:
        return _tree_proof_indexes(lo, lo + k, n) + subtree_indexes(lo + k, hi)
    return subtree_indexes(lo, lo + k) + _tree_proof_indexes(lo + k, hi, n)


def _tree_proof(
    lo: int, hi: int, n: int, hashes: Sequence[bytes]
) -> tuple[list[bytes], Sequence[bytes]]:
    if n == hi:
        if lo == 0:
            return [], hashes  # the verifier knows the old tree's hash itself
        common, hashes = _subtree_hash(lo, hi, hashes)
        return [common], hashes
    k, _ = _max_pow2(hi - lo)
    if n <= lo + k:
        proof, hashes = _tree_proof(lo, lo + k, n, hashes)
        sibling, hashes = _subtree_hash(lo + k, hi, hashes)
    else:
        sibling, hashes = _subtree_hash(lo, lo + k, hashes)
        proof, hashes = _tree_proof(lo + k, hi, n, hashes)
    return [*proof, sibling], hashes


def _run_tree_proof(
    proof: Sequence[bytes], lo: int, hi: int, n: int, old: bytes
) -> tuple[bytes, bytes]:
    """The hashes of records [lo, hi) in the old tree and in the new one that the proof implies,
    or ProofError."""
    if n == hi:
        if lo == 0:
            if proof:
                raise ProofError("the proof has more hashes than the trees need")
            return old, old
        if len(proof) != 1:
            raise ProofError("the proof has the wrong number of hashes")
        return proof[0], proof[0]
    if not proof:
        raise ProofError("the proof has fewer hashes than the trees need")
    k, _ = _max_pow2(hi - lo)
    if n <= lo + k:
        old_hash, new_hash = _run_tree_proof(proof[:-1], lo, lo + k, n, old)
        return old_hash, node_hash(new_hash, proof[-1])
    old_hash, new_hash = _run_tree_proof(proof[:-1], lo + k, hi, n, old)
    return node_hash(proof[-1], old_hash), node_hash(proof[-1], new_hash)


class InMemoryTree:
    """A whole tree's stored hashes in a list: what tests, and any caller that holds a log's
    hashes in memory, append records to and read proofs from."""

    def __init__(self) -> None:
        self.hashes: list[bytes] = []
        self.size = 0

    def append(self, entry: bytes) -> int:
        """Adds a record; returns its index."""
        return self.append_leaf_hash(leaf_hash(entry))

    def append_leaf_hash(self, leaf: bytes) -> int:
        """Adds a record by its leaf hash; returns its index."""
        index = self.size
        self.hashes.extend(stored_hashes(index, leaf, self.read_hashes))
        self.size += 1
        return index

    def read_hashes(self, indexes: Sequence[int]) -> list[bytes]:
        """The HashReader over this tree's stored hashes."""
        return [self.hashes[i] for i in indexes]

    def root(self) -> bytes:
        """The current tree's root hash."""
        return tree_hash(self.size, self.read_hashes)
