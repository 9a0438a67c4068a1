"""flow options (style, tier, language, hints of a discussion's protocol) and channel settings (owners)

Revision ID: 0003
Revises: 0002
"""

from alembic import op
import sqlalchemy as sa


revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('discussions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('options', sa.JSON(), nullable=False, server_default='{}'))
    op.create_table('channel_settings',
    sa.Column('platform', sa.String(length=16), nullable=False),
    sa.Column('workspace', sa.String(length=64), nullable=False),
    sa.Column('channel', sa.String(length=64), nullable=False),
    sa.Column('owners', sa.JSON(), nullable=False),
    sa.Column('updated_by', sa.String(length=64), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('platform', 'workspace', 'channel', name=op.f('pk_channel_settings'))
    )


def downgrade() -> None:
    op.drop_table('channel_settings')
    with op.batch_alter_table('discussions', schema=None) as batch_op:
        batch_op.drop_column('options')
