"""games: a contest's game, boards beside layouts, the right to upload game logs, one
submission per game log, and each judged game's players or error

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN and CREATE INDEX, not batch mode: SQLite makes both in place, where a batch
    # would copy `teams` and `submissions` and drop the originals, which the rows of other
    # tables refer to.
    op.add_column(
        "contests",
        sa.Column("game", sa.String(length=16), server_default="wordytaire", nullable=False),
    )
    op.add_column(
        "layouts",
        sa.Column("game", sa.String(length=16), server_default="wordytaire", nullable=False),
    )
    op.add_column(
        "teams", sa.Column("uploads_logs", sa.Boolean(), server_default=sa.false(), nullable=False)
    )
    op.add_column("submissions", sa.Column("shared_sha256", sa.String(length=64), nullable=True))
    op.create_index(
        "uq_submissions_shared", "submissions", ["contest_id", "shared_sha256"], unique=True
    )
    op.create_table(
        "game_players",
        sa.Column("result_id", sa.Integer(), nullable=False),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("nick", sa.String(length=32), nullable=False),
        sa.Column("score", sa.BigInteger(), nullable=False),
        sa.Column("removed", sa.Boolean(), nullable=False),
        sa.Column("win_twelfths", sa.Integer(), nullable=False),
        sa.Column("spread", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["result_id"], ["results.id"]),
        sa.PrimaryKeyConstraint("result_id", "seat"),
    )
    op.create_table(
        "game_errors",
        sa.Column("result_id", sa.Integer(), nullable=False),
        sa.Column("line", sa.Integer(), nullable=False),
        sa.Column("reason", sa.String(length=32), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["result_id"], ["results.id"]),
        sa.PrimaryKeyConstraint("result_id"),
    )


def downgrade() -> None:
    op.drop_table("game_errors")
    op.drop_table("game_players")
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.drop_index("uq_submissions_shared")
        batch_op.drop_column("shared_sha256")
    with op.batch_alter_table("teams", schema=None) as batch_op:
        batch_op.drop_column("uploads_logs")
    with op.batch_alter_table("layouts", schema=None) as batch_op:
        batch_op.drop_column("game")
    with op.batch_alter_table("contests", schema=None) as batch_op:
        batch_op.drop_column("game")
