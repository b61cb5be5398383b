"""Registering word lists: content-addressed in S3 (normalised: sorted unique words) and in SQL."""

from __future__ import annotations

from core.ports import BlobStore, SubmissionStore
from core.records import WordList
from judge import Lexicon


def register_lexicon(
    store: SubmissionStore, blobs: BlobStore, lexicon: Lexicon, *, name: str, source: str, by: str
) -> WordList:
    """Store the list under its id and record it; registering the same words again is a no-op."""
    key = f"lexicons/{lexicon.id}.txt"
    normalised = "".join(word + "\n" for word in sorted(lexicon.words)).encode()
    blobs.put(key, normalised, "text/plain")
    return store.add_lexicon(
        id=lexicon.id,
        name=name,
        words=len(lexicon),
        size=len(normalised),
        blob_key=key,
        source=source,
        created_by=by,
    )
