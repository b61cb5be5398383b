"""Wordytaire's line counts in a table of its own: a move list's lines legal and illegal and the
tiles it placed, hung off its result row, which keeps what every game's result has (a game
log's held 0s there, its own result being in `crosstiles_results` since 0009)

Revision ID: 0017
Revises: 0016
"""

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

COUNTS = ("legal", "illegal", "tiles")
MOVE_LISTS = (
    "SELECT r.id FROM results r JOIN submissions s ON s.id = r.submission_id"
    " JOIN contests c ON c.id = s.contest_id WHERE c.game = 'wordytaire'"
)


def upgrade() -> None:
    op.create_table(
        "wordytaire_results",
        sa.Column("result_id", sa.Integer(), nullable=False),
        sa.Column("legal", sa.Integer(), nullable=False),
        sa.Column("illegal", sa.Integer(), nullable=False),
        sa.Column("tiles", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["result_id"], ["results.id"]),
        sa.PrimaryKeyConstraint("result_id"),
    )
    op.execute(
        "INSERT INTO wordytaire_results (result_id, legal, illegal, tiles)"
        f" SELECT id, legal, illegal, tiles FROM results WHERE id IN ({MOVE_LISTS})"
    )
    # DROP COLUMN in place (SQLite 3.35+), as 0012 does: batch mode would drop and copy
    # `results`, which the rows of each game's own tables refer to.
    for name in COUNTS:
        op.drop_column("results", name)


def downgrade() -> None:
    # ADD COLUMN in place, NOT NULL with a default (what SQLite needs to add one): 0 where no
    # move list's counts are kept, as a game log's were.
    for name in COUNTS:
        op.add_column("results", sa.Column(name, sa.Integer(), nullable=False, server_default="0"))
    op.execute(
        "UPDATE results SET"
        " legal = (SELECT w.legal FROM wordytaire_results w WHERE w.result_id = results.id),"
        " illegal = (SELECT w.illegal FROM wordytaire_results w WHERE w.result_id = results.id),"
        " tiles = (SELECT w.tiles FROM wordytaire_results w WHERE w.result_id = results.id)"
        " WHERE id IN (SELECT result_id FROM wordytaire_results)"
    )
    op.drop_table("wordytaire_results")
