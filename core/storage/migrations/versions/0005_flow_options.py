"""flow options: style, tier, language, hints and owners of a discussion's protocol

Revision ID: 0005
Revises: 0002
"""

from alembic import op
import sqlalchemy as sa


revision = '0005'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('discussions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('options', sa.JSON(), nullable=False, server_default='{}'))


def downgrade() -> None:
    with op.batch_alter_table('discussions', schema=None) as batch_op:
        batch_op.drop_column('options')
