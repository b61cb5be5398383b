"""A team's upload checked as an auditor would, in words for its page: its receipt against the
server's receipt key (`POST /v1/receipts/verify`), and its entry in the contest's transparency
log against the latest signed checkpoint (the inclusion proof `GET /v1/submissions/{id}/log`
serves, verified here with `core.tlog`; docs/transparency.md)."""

from __future__ import annotations

import base64
from dataclasses import dataclass

from core import receipts, transparency
from core.log_signing import LogSigner
from core.ports import ApiStore
from core.records import Submission
from core.tlog import (
    NoteError,
    ProofError,
    Verifier,
    check_record,
    leaf_hash,
    open_checkpoint,
    prove_record,
)


@dataclass(frozen=True)
class Checked:
    """One finding: whether it holds (None: not yet known), and its sentence."""

    ok: bool | None
    sentence: str


def receipt_check(receipt_key: str, sub: Submission) -> Checked:
    valid = receipts.verify(
        receipt_key,
        sub.receipt,
        submission=sub.id,
        team=sub.team_id,
        contest=sub.contest_id,
        sha256=sub.sha256,
        received_at=sub.received_at,
    )
    if valid:
        return Checked(True, "The receipt is valid: this server issued it for exactly this upload.")
    return Checked(False, "The receipt does not verify: it was not issued for these fields.")


def log_check(store: ApiStore, signer: LogSigner | None, sub: Submission, team_id: str) -> Checked:
    """Whether the team's upload of `sub` is in the contest's log under its latest signed
    checkpoint, in words."""
    if signer is None:
        return Checked(None, "This server keeps no transparency log.")
    leaves = [(leaf, who) for leaf, kind, who in store.log_leaves(sub.id) if kind == "upload"]
    leaf = next((leaf for leaf, who in leaves if who == team_id), None)
    if leaf is None and leaves:
        leaf = leaves[0][0]
    if leaf is None:
        return Checked(None, "The upload is not in the contest's log yet: reload in a second.")
    head = store.log_head(sub.contest_id)
    if head is None or leaf >= head.size:
        return Checked(
            None,
            f"Your upload is entry {leaf} of the contest's log; the next checkpoint, signed "
            "within about a second, will include it: reload to check it.",
        )
    entries, _ = store.log_entries(sub.contest_id, leaf, 1)
    if not entries or not _says_upload(entries[0], sub):
        return Checked(False, f"Entry {leaf} of the contest's log does not record this upload.")
    verifier = Verifier.from_key(signer.verifier_key)
    try:
        checkpoint = open_checkpoint(head.checkpoint, [verifier], signer.origin(sub.contest_id))
        proof = prove_record(
            checkpoint.size, leaf, lambda ids: store.log_hashes(sub.contest_id, ids)
        )
        check_record(proof, checkpoint.size, checkpoint.root, leaf, leaf_hash(entries[0]))
    except (NoteError, ProofError, ValueError) as exc:
        return Checked(False, f"The inclusion of entry {leaf} does not verify: {exc}.")
    root = base64.b64encode(checkpoint.root).decode()
    return Checked(
        True,
        f"Your upload is entry {leaf} of the contest's log, included in its checkpoint of "
        f"{checkpoint.size:,} entries (root {root[:12]}…) signed by the key {verifier.name} "
        f"({signer.verifier_key.split('+')[1]}).",
    )


def _says_upload(entry: bytes, sub: Submission) -> bool:
    try:
        fields = transparency.decode(entry)
    except transparency.EntryError:
        return False
    return (
        fields.get("type") == "upload"
        and fields.get("submission") == sub.id
        and fields.get("sha256") == sub.sha256
        and fields.get("received_at") == sub.received_at
    )
