"""a turn's words so far, kept for the discussion's page so every replica serving it reads the same

Revision ID: 0023
Revises: 0022
"""

from alembic import op
import sqlalchemy as sa

revision = '0023'
down_revision = '0022'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'live_texts',
        sa.Column('discussion_id', sa.String(length=32), nullable=False),
        sa.Column('key', sa.String(length=160), nullable=False),
        sa.Column('text', sa.Text(), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['discussion_id'], ['discussions.id']),
        sa.PrimaryKeyConstraint('discussion_id', 'key'),
    )


def downgrade() -> None:
    op.drop_table('live_texts')
