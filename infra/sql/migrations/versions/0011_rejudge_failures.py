"""the submissions a rejudge run could not judge, each with its reason code: counted as done,
so one upload whose object is gone (or damaged, or whose report is over the cap) never keeps a
run from becoming ready, and listed in its preview

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rejudge_failures",
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("submission_id", sa.String(length=64), nullable=False),
        sa.Column("reason", sa.String(length=32), nullable=False),
        sa.Column("failed_at", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["rejudge_runs.id"]),
        sa.PrimaryKeyConstraint("run_id", "submission_id"),
    )


def downgrade() -> None:
    op.drop_table("rejudge_failures")
