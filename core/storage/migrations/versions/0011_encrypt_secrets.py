"""stored credentials encrypted at rest (the Slack OAuth installation store's tokens, with COUNCIL_ENCRYPTION_KEY);
and each running turn's reservation of its workspace's daily budget

Revision ID: 0011
Revises: 0007
"""

from alembic import op
import sqlalchemy as sa


revision = '0011'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('turns') as batch:
        batch.add_column(sa.Column('reserved_usd', sa.Float(), nullable=False, server_default='0'))
        batch.add_column(sa.Column('reserved_at', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('turns') as batch:
        batch.drop_column('reserved_at')
        batch.drop_column('reserved_usd')
