"""the worker host whose upload cache holds a submission's bytes (the last to judge it), so a
rejudge sends its batch there; NULL: none known

Revision ID: 0016
Revises: 0015
"""

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # In place, as 0012 does: batch mode would copy `submissions` under the rows that refer to it.
    op.add_column("submissions", sa.Column("held_on", sa.String(64), nullable=True))


def downgrade() -> None:
    op.drop_column("submissions", "held_on")
