"""the hash of the slash commands last synced (sync only when they change); a digest's post kept as written
before it is sent (a retry sends it again rather than asking the model anew)

Revision ID: 0008
Revises: 0007
"""

from alembic import op
import sqlalchemy as sa


revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'command_sync',
        sa.Column('platform', sa.String(length=16), nullable=False),
        sa.Column('application', sa.String(length=64), nullable=False),
        sa.Column('digest', sa.String(length=64), nullable=False),
        sa.Column('synced_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('platform', 'application', name='pk_command_sync'),
    )
    with op.batch_alter_table('digests') as batch:
        batch.add_column(sa.Column('post', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('digests') as batch:
        batch.drop_column('post')
    op.drop_table('command_sync')
