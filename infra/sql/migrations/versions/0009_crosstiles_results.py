"""a game log's result in its own table: valid, turns, the failing line, reason and detail
(from `game_errors`, and from the Wordytaire columns it was kept in), its players beside it

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

GAME_LOGS = (
    "SELECT r.id FROM results r JOIN submissions s ON s.id = r.submission_id"
    " JOIN contests c ON c.id = s.contest_id WHERE c.game = 'crosstiles'"
)


def upgrade() -> None:
    op.create_table(
        "crosstiles_results",
        sa.Column("result_id", sa.Integer(), nullable=False),
        sa.Column("valid", sa.Boolean(), nullable=False),
        sa.Column("turns", sa.Integer(), nullable=False),
        sa.Column("line", sa.Integer(), nullable=True),
        sa.Column("reason", sa.String(length=32), nullable=True),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["result_id"], ["results.id"]),
        sa.PrimaryKeyConstraint("result_id"),
    )
    # Every judged log: `illegal` was 1 for an invalid one, `legal` the lines that passed.
    op.execute(
        "INSERT INTO crosstiles_results (result_id, valid, turns, line, reason, detail)"
        " SELECT r.id, r.illegal = 0, r.legal + r.illegal, e.line, e.reason, e.detail"
        " FROM results r LEFT JOIN game_errors e ON e.result_id = r.id"
        f" WHERE r.id IN ({GAME_LOGS})"
    )
    op.execute(f"UPDATE results SET legal = 0, illegal = 0 WHERE id IN ({GAME_LOGS})")
    op.drop_table("game_errors")
    op.rename_table("game_players", "crosstiles_players")


def downgrade() -> None:
    op.rename_table("crosstiles_players", "game_players")
    op.create_table(
        "game_errors",
        sa.Column("result_id", sa.Integer(), nullable=False),
        sa.Column("line", sa.Integer(), nullable=False),
        sa.Column("reason", sa.String(length=32), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["result_id"], ["results.id"]),
        sa.PrimaryKeyConstraint("result_id"),
    )
    op.execute(
        "INSERT INTO game_errors (result_id, line, reason, detail)"
        " SELECT result_id, line, reason, detail FROM crosstiles_results WHERE reason IS NOT NULL"
    )
    op.execute(
        "UPDATE results SET"
        " legal = (SELECT t.turns - CASE WHEN t.valid THEN 0 ELSE 1 END"
        " FROM crosstiles_results t WHERE t.result_id = results.id),"
        " illegal = (SELECT CASE WHEN t.valid THEN 0 ELSE 1 END"
        " FROM crosstiles_results t WHERE t.result_id = results.id)"
        " WHERE id IN (SELECT result_id FROM crosstiles_results)"
    )
    op.drop_table("crosstiles_results")
