"""rate budgets leased a batch at a time by every replica instead of held by one: the tokens the last lease took
(read back by the statement that took them); who held a bucket, until when, and whether it was wanted, go

Revision ID: 0026
Revises: 0025
"""

from alembic import op
import sqlalchemy as sa


revision = '0026'
down_revision = '0025'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('rate_budget') as batch:
        batch.add_column(sa.Column('taken', sa.Float(), nullable=False, server_default='0'))
        batch.drop_column('shared_until')
        batch.drop_column('wanted')
        batch.drop_column('held_until')
        batch.drop_column('holder')


def downgrade() -> None:
    with op.batch_alter_table('rate_budget') as batch:
        batch.add_column(sa.Column('holder', sa.String(length=64), nullable=True))
        batch.add_column(sa.Column('held_until', sa.Float(), nullable=False, server_default='0'))
        batch.add_column(sa.Column('wanted', sa.Boolean(), nullable=False, server_default=sa.false()))
        batch.add_column(sa.Column('shared_until', sa.Float(), nullable=False, server_default='0'))
        batch.drop_column('taken')
