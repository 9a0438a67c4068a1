"""a rate budget held by no replica is leased from a batch of tokens at a time: the tokens the last lease took,
read back by the statement that took them

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


def downgrade() -> None:
    with op.batch_alter_table('rate_budget') as batch:
        batch.drop_column('taken')
