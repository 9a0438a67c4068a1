"""database-enforced invariants: one live ballot per voter and poll, processed events prunable by age

Revision ID: 0004
Revises: 0003
"""

from alembic import op
import sqlalchemy as sa


revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Ballots a double click left live twice: keep the newest live one per voter and poll, supersede the rest,
    # so the unique index below can be built.
    op.execute(
        "UPDATE ballots SET superseded = true WHERE superseded = false AND id NOT IN ("
        " SELECT max(id) FROM ballots WHERE superseded = false GROUP BY poll_id, voter_id)"
    )
    op.create_index(
        'uq_ballots_live', 'ballots', ['poll_id', 'voter_id'], unique=True,
        postgresql_where=sa.text('NOT superseded'), sqlite_where=sa.text('NOT superseded'),
    )
    op.create_index('ix_processed_events_seen_at', 'processed_events', ['seen_at'])


def downgrade() -> None:
    op.drop_index('ix_processed_events_seen_at', table_name='processed_events')
    op.drop_index('uq_ballots_live', table_name='ballots')
