"""the tag each new post in a forum carries, chosen per channel (Discord forums that require a tag)

Revision ID: 0015
Revises: 0014
"""

from alembic import op
import sqlalchemy as sa


revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'channel_tags',
        sa.Column('platform', sa.String(length=16), nullable=False),
        sa.Column('workspace', sa.String(length=64), nullable=False),
        sa.Column('channel', sa.String(length=64), nullable=False),
        sa.Column('tag', sa.String(length=64), nullable=False),
        sa.Column('updated_by', sa.String(length=64), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('platform', 'workspace', 'channel', name=op.f('pk_channel_tags')),
    )


def downgrade() -> None:
    op.drop_table('channel_tags')
