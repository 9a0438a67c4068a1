"""an index on the outbox's turn key: a turn reads as published when its post went out, looked up by that key

Revision ID: 0019
Revises: 0018
"""

from alembic import op


revision = '0019'
down_revision = '0018'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_outbox_turn_key', 'outbox', ['turn_key'])


def downgrade() -> None:
    op.drop_index('ix_outbox_turn_key', table_name='outbox')
