"""rate budgets held by one replica at a time: who holds a bucket, until when, whether another wants it, and until
when it is shared call by call instead

Revision ID: 0020
Revises: 0019
"""

from alembic import op
import sqlalchemy as sa


revision = '0020'
down_revision = '0019'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('rate_budget') as batch:
        batch.add_column(sa.Column('holder', sa.String(length=64), nullable=True))
        batch.add_column(sa.Column('held_until', sa.Float(), nullable=False, server_default='0'))
        batch.add_column(sa.Column('wanted', sa.Boolean(), nullable=False, server_default=sa.false()))
        batch.add_column(sa.Column('shared_until', sa.Float(), nullable=False, server_default='0'))


def downgrade() -> None:
    with op.batch_alter_table('rate_budget') as batch:
        batch.drop_column('shared_until')
        batch.drop_column('wanted')
        batch.drop_column('held_until')
        batch.drop_column('holder')
