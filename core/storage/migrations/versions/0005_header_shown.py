"""the state a discussion's header message last showed, so it is redrawn once per change of state

Revision ID: 0005
Revises: 0004
"""

from alembic import op
import sqlalchemy as sa


revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('discussions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('header_shown', sa.String(length=255), nullable=False, server_default=''))


def downgrade() -> None:
    with op.batch_alter_table('discussions', schema=None) as batch_op:
        batch_op.drop_column('header_shown')
