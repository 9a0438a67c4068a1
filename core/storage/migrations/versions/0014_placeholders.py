"""the messages turns show while they are written (placeholders, live text), so a process taking over after a
crash can remove the ones its predecessor left half-written

Revision ID: 0014
Revises: 0013
"""

from alembic import op
import sqlalchemy as sa



revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'placeholders',
        sa.Column('discussion_id', sa.String(length=32), nullable=False),
        sa.Column('key', sa.String(length=160), nullable=False),
        sa.Column('ref', sa.String(length=200), nullable=False),
        sa.Column('owner', sa.String(length=128), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['discussion_id'], ['discussions.id']),
        sa.PrimaryKeyConstraint('discussion_id', 'key'),
    )


def downgrade() -> None:
    op.drop_table('placeholders')
