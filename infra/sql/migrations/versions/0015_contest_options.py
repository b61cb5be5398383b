"""a contest's options, as its game took them at creation (a Crosstiles contest's rating rules);
NULL: the game's defaults

Revision ID: 0015
Revises: 0014
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # In place, as 0012 does: batch mode would copy `contests` under the rows that refer to it.
    op.add_column("contests", sa.Column("options", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("contests", "options")
