"""revoked dashboard sessions: a signed-out session cookie is refused by every API process

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "revoked_sessions",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("expires_at", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("revoked_sessions", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_revoked_sessions_expires_at"), ["expires_at"], unique=False
        )


def downgrade() -> None:
    op.drop_table("revoked_sessions")
