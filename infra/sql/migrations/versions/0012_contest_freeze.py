"""a contest's scoreboard freeze: when it starts, when the organiser thawed it, and the ruleset
its public standings keep while frozen (recorded by a rejudge applied during the freeze)

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

COLUMNS = ("freeze_at", "thawed_at", "frozen_lexicon_id", "frozen_layout_id")


def upgrade() -> None:
    # ADD COLUMN in place (nullable, no default: every contest so far never froze), not batch
    # mode, which would copy `contests` under the rows of other tables that refer to it.
    op.add_column("contests", sa.Column("freeze_at", sa.String(length=32), nullable=True))
    op.add_column("contests", sa.Column("thawed_at", sa.String(length=32), nullable=True))
    op.add_column("contests", sa.Column("frozen_lexicon_id", sa.String(length=64), nullable=True))
    op.add_column("contests", sa.Column("frozen_layout_id", sa.String(length=64), nullable=True))


def downgrade() -> None:
    # DROP COLUMN in place (SQLite 3.35+): batch mode would drop and copy `contests`, which the
    # rows of other tables refer to.
    for name in COLUMNS:
        op.drop_column("contests", name)
