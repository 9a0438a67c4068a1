"""the spend of every workspace by time: the whole process's daily budget sums a day of all of them

Revision ID: 0021
Revises: 0020
"""

from alembic import op


revision = '0021'
down_revision = '0020'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_spend_starts', 'spend', ['starts_at'])


def downgrade() -> None:
    op.drop_index('ix_spend_starts', table_name='spend')
