"""rate budgets shared by every replica: a token bucket per workspace and method, or per channel

Revision ID: 0007
Revises: 0006
"""

from alembic import op
import sqlalchemy as sa


revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'rate_budget',
        sa.Column('key', sa.String(length=200), nullable=False),
        sa.Column('tokens', sa.Float(), nullable=False),
        sa.Column('at', sa.Float(), nullable=False),
        sa.Column('paused_until', sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint('key', name='pk_rate_budget'),
    )


def downgrade() -> None:
    op.drop_table('rate_budget')
