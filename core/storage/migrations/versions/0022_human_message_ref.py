"""a person's message keeps its platform ref, so the reaction saying it was answered can be put on it

Revision ID: 0022
Revises: 0021
"""

from alembic import op
import sqlalchemy as sa


revision = '0022'
down_revision = '0021'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('human_messages') as batch:
        batch.add_column(sa.Column('ref', sa.String(length=64), nullable=False, server_default=''))


def downgrade() -> None:
    with op.batch_alter_table('human_messages') as batch:
        batch.drop_column('ref')
