"""outbox backoff: when a refused post is next tried, why it was refused, and posts that can never land

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-24 07:30:00
"""

from alembic import op
import sqlalchemy as sa


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.add_column(sa.Column('next_attempt_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('last_error', sa.String(length=300), nullable=False, server_default=''))
        batch_op.add_column(sa.Column('dead', sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.drop_column('dead')
        batch_op.drop_column('last_error')
        batch_op.drop_column('next_attempt_at')
