"""word hashes: a submission's distinct words kept as a signature instead of as text

Revision ID: 0004
Revises: 0003
"""

import sys
import zlib
from array import array

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def _signature(words: str) -> bytes:
    """As core.word_hashes.signature (copied: a migration must not change with the code)."""
    hashes = array("I", sorted({zlib.crc32(word.encode()) for word in words.split()}))
    if sys.byteorder == "big":
        hashes.byteswap()
    return hashes.tobytes()


def upgrade() -> None:
    word_hashes = op.create_table(
        "word_hashes",
        sa.Column("submission_id", sa.String(length=64), nullable=False),
        sa.Column("hashes", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(["submission_id"], ["submissions.id"]),
        sa.PrimaryKeyConstraint("submission_id"),
    )
    conn = op.get_bind()
    rows = conn.execute(sa.text("SELECT submission_id, words FROM submission_words"))
    while batch := rows.fetchmany(500):
        op.bulk_insert(
            word_hashes,
            [{"submission_id": sid, "hashes": _signature(words)} for sid, words in batch],
        )
    op.drop_table("submission_words")


def downgrade() -> None:
    # The words cannot be recovered from their hashes: an affected-only rejudge after a
    # downgrade judges every submission again (correct, only slower), until judged anew.
    op.create_table(
        "submission_words",
        sa.Column("submission_id", sa.String(length=64), nullable=False),
        sa.Column("words", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["submission_id"], ["submissions.id"]),
        sa.PrimaryKeyConstraint("submission_id"),
    )
    op.drop_table("word_hashes")
