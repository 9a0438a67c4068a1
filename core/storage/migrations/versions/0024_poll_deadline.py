"""a poll that outlives its discussion keeps its deadline, so the timer closes it then (and a reminder can read it)

Revision ID: 0024
Revises: 0023
"""

from alembic import op
import sqlalchemy as sa


revision = '0024'
down_revision = '0023'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('polls') as batch:
        batch.add_column(sa.Column('closes_at', sa.DateTime(timezone=True), nullable=True))
        batch.create_index('ix_polls_closes_at', ['closes_at'])


def downgrade() -> None:
    with op.batch_alter_table('polls') as batch:
        batch.drop_index('ix_polls_closes_at')
        batch.drop_column('closes_at')
