"""a channel's defaults for new discussions (flow, rounds, style, tier, lang, experts)

Revision ID: 0010
Revises: 0009
"""

from alembic import op
import sqlalchemy as sa


revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'channel_defaults',
        sa.Column('platform', sa.String(length=16), nullable=False),
        sa.Column('workspace', sa.String(length=64), nullable=False),
        sa.Column('channel', sa.String(length=64), nullable=False),
        sa.Column('defaults', sa.JSON(), nullable=False),
        sa.Column('updated_by', sa.String(length=64), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('platform', 'workspace', 'channel', name=op.f('pk_channel_defaults')),
    )


def downgrade() -> None:
    op.drop_table('channel_defaults')
