"""a poll with a deadline keeps when its reminder was claimed, so it goes out once across restarts and replicas

Revision ID: 0025
Revises: 0024
"""

from alembic import op
import sqlalchemy as sa


revision = '0025'
down_revision = '0024'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('polls') as batch:
        batch.add_column(sa.Column('reminded_at', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('polls') as batch:
        batch.drop_column('reminded_at')
