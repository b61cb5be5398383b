"""one game, one submission: a shared upload is keyed by the game's identity (what its judge
reads), not its bytes; the key two games may not share; and every other team's copy of it

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # RENAME COLUMN and ADD COLUMN in place (SQLite 3.25+ and PostgreSQL), not batch mode,
    # which would copy `submissions` under the rows of other tables that refer to it. Keys of
    # uploads stored before this revision stay their bytes' SHA-256.
    op.drop_index("uq_submissions_shared", table_name="submissions")
    op.execute("ALTER TABLE submissions RENAME COLUMN shared_sha256 TO game_key")
    op.create_index("uq_submissions_game", "submissions", ["contest_id", "game_key"], unique=True)
    op.add_column("submissions", sa.Column("match_key", sa.String(length=64), nullable=True))
    op.create_index("uq_submissions_match", "submissions", ["contest_id", "match_key"], unique=True)
    op.create_table(
        "submission_copies",
        sa.Column("submission_id", sa.String(length=64), nullable=False),
        sa.Column("team_id", sa.String(length=64), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("blob_key", sa.String(length=300), nullable=False),
        sa.Column("received_at", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(["submission_id"], ["submissions.id"]),
        sa.ForeignKeyConstraint(["team_id"], ["teams.id"]),
        sa.PrimaryKeyConstraint("submission_id", "team_id"),
    )
    op.create_index("ix_submission_copies_team", "submission_copies", ["team_id"])


def downgrade() -> None:
    op.drop_index("ix_submission_copies_team", table_name="submission_copies")
    op.drop_table("submission_copies")
    op.drop_index("uq_submissions_match", table_name="submissions")
    op.drop_index("uq_submissions_game", table_name="submissions")
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.drop_column("match_key")
    op.execute("ALTER TABLE submissions RENAME COLUMN game_key TO shared_sha256")
    op.create_index(
        "uq_submissions_shared", "submissions", ["contest_id", "shared_sha256"], unique=True
    )
