"""each contest's transparency log: its entries numbered in commit order, the tree's stored
hashes, and the signed checkpoint (docs/transparency.md)

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "log_entries",
        sa.Column("contest_id", sa.String(length=64), nullable=False),
        sa.Column("leaf", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("entry", sa.LargeBinary(), nullable=False),
        sa.Column("sealed", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("submission_id", sa.String(length=64), nullable=True),
        sa.PrimaryKeyConstraint("contest_id", "leaf"),
    )
    op.create_index("ix_log_entries_submission", "log_entries", ["submission_id"])
    op.create_table(
        "log_heads",
        sa.Column("contest_id", sa.String(length=64), nullable=False),
        sa.Column("next_leaf", sa.BigInteger(), nullable=False),
        sa.Column("closed", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.PrimaryKeyConstraint("contest_id"),
    )
    op.create_table(
        "logs",
        sa.Column("contest_id", sa.String(length=64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("root", sa.LargeBinary(), nullable=False),
        sa.Column("checkpoint", sa.Text(), nullable=False),
        sa.Column("signed_at", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("contest_id"),
    )
    op.create_table(
        "log_hashes",
        sa.Column("contest_id", sa.String(length=64), nullable=False),
        sa.Column("n", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("hash", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("contest_id", "n"),
    )


def downgrade() -> None:
    op.drop_table("log_hashes")
    op.drop_table("logs")
    op.drop_table("log_heads")
    op.drop_index("ix_log_entries_submission", table_name="log_entries")
    op.drop_table("log_entries")
