"""each discussion's costliest model call so far, kept on its row: a step reads it with the discussion instead of
a maximum over the discussion's usage

Revision ID: 0012
Revises: 0011
"""

from alembic import op
import sqlalchemy as sa


revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('discussions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('costliest_call_usd', sa.Float(), nullable=False, server_default='0'))
    op.execute("UPDATE discussions SET costliest_call_usd = (SELECT coalesce(max(usage.cost_usd), 0) FROM usage "
               "WHERE usage.discussion_id = discussions.id)")


def downgrade() -> None:
    with op.batch_alter_table('discussions', schema=None) as batch_op:
        batch_op.drop_column('costliest_call_usd')
