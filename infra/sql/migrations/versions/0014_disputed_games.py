"""rival logs of one game: the seed-and-players index no longer unique (every log of a game is
kept and judged), and the organiser's settlements of disputed games

Revision ID: 0014
Revises: 0013
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("uq_submissions_match", table_name="submissions")
    op.create_index("ix_submissions_match", "submissions", ["contest_id", "match_key"])
    op.create_table(
        "dispute_settlements",
        sa.Column("submission_id", sa.String(length=64), nullable=False),
        sa.Column("chosen_id", sa.String(length=64), nullable=False),
        sa.Column("contest_id", sa.String(length=64), nullable=False),
        sa.Column("match_key", sa.String(length=64), nullable=False),
        sa.Column("settled_at", sa.String(length=32), nullable=False),
        sa.Column("settled_by", sa.String(length=100), nullable=False),
        sa.PrimaryKeyConstraint("submission_id"),
    )
    op.create_index(
        "ix_dispute_settlements_match", "dispute_settlements", ["contest_id", "match_key"]
    )


def downgrade() -> None:
    # Refused while rival logs are stored: a unique index cannot hold them.
    op.drop_index("ix_dispute_settlements_match", table_name="dispute_settlements")
    op.drop_table("dispute_settlements")
    op.drop_index("ix_submissions_match", table_name="submissions")
    op.create_index("uq_submissions_match", "submissions", ["contest_id", "match_key"], unique=True)
