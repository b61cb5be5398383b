"""Signed intake receipts: proof of what was received, from whom, when, that the server can check."""

from __future__ import annotations

import hashlib
import hmac


def sign(
    key: str, *, submission: str, team: str, contest: str, sha256: str, received_at: str
) -> str:
    message = "\n".join(["tilejudge-receipt-v1", submission, team, contest, sha256, received_at])
    # "surrogatepass": a field from a client may hold a lone surrogate, which plain UTF-8
    # refuses; such a field signs to something no genuine receipt matches, and never raises.
    data = message.encode("utf-8", "surrogatepass")
    return hmac.new(key.encode(), data, hashlib.sha256).hexdigest()


def verify(key: str, receipt: str, **fields: str) -> bool:
    # Bytes, not str: compare_digest refuses a str with non-ASCII characters.
    return hmac.compare_digest(sign(key, **fields).encode(), receipt.encode("utf-8", "replace"))
