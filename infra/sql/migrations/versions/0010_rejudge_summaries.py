"""an applied rejudge run's summary, recorded by `apply`: the preview's rows and counts as they
stood when the contest switched, so later uploads, deletions and runs leave it as it was

Runs applied before this revision get no row: their summary was not recorded, and computing it
now would show what the data says today (new teams' uploads judged under one ruleset only),
which is what the table is for not showing.

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rejudge_summaries",
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("frozen_at", sa.String(length=32), nullable=False),
        sa.Column("scores", sa.Integer(), nullable=False),
        sa.Column("ranks", sa.Integer(), nullable=False),
        sa.Column("changed", sa.Text(), nullable=False),
        sa.Column("rank_changes", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["rejudge_runs.id"]),
        sa.PrimaryKeyConstraint("run_id"),
    )


def downgrade() -> None:
    op.drop_table("rejudge_summaries")
