"""a discussion's revision: counted up by every transaction that locks the discussion without holding its lease (a
command, a vote, a reply), so the driver that holds the lease knows its own copy of the state is still whole

Revision ID: 0018
Revises: 0017
"""

from alembic import op
import sqlalchemy as sa


revision = '0018'
down_revision = '0017'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('discussions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('revision', sa.Integer(), nullable=False, server_default='0'))


def downgrade() -> None:
    with op.batch_alter_table('discussions', schema=None) as batch_op:
        batch_op.drop_column('revision')
