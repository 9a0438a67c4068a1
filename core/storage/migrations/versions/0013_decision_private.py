"""a decision record says whether its channel was private: such a record is shown in that channel alone

Revision ID: 0013
Revises: 0012
"""

from alembic import op
import sqlalchemy as sa


revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A plain ADD COLUMN: on SQLite a batch copy of the table would drop its full-text triggers.
    op.add_column('decisions', sa.Column('private', sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table('decisions', schema=None) as batch_op:
        batch_op.drop_column('private')
