"""each workspace's spend per quarter hour, so the daily budget is read in constant time; filled from the
usage of the last 31 days

Revision ID: 0006
Revises: 0005
"""

from collections import defaultdict
from datetime import UTC, datetime, timedelta

from alembic import op
import sqlalchemy as sa


revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None

BUCKET = timedelta(minutes=15)


def upgrade() -> None:
    spend = op.create_table(
        'spend',
        sa.Column('platform', sa.String(length=16), nullable=False),
        sa.Column('workspace', sa.String(length=64), nullable=False),
        sa.Column('starts_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('cost_usd', sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint('platform', 'workspace', 'starts_at', name='pk_spend'),
    )
    since = datetime.now(UTC) - timedelta(days=31)
    rows = op.get_bind().execute(sa.text(
        "SELECT d.platform, d.workspace, u.created_at, u.cost_usd FROM usage u "
        "JOIN discussions d ON u.discussion_id = d.id WHERE u.created_at >= :since"), {"since": since})
    totals: dict[tuple[str, str, datetime], float] = defaultdict(float)
    for platform, workspace, created_at, cost in rows:
        if isinstance(created_at, str):  # SQLite hands a raw text column back as text
            created_at = datetime.fromisoformat(created_at)
        if created_at.tzinfo is None:
            created_at = created_at.replace(tzinfo=UTC)
        start = datetime.fromtimestamp(created_at.timestamp() // BUCKET.total_seconds() * BUCKET.total_seconds(), UTC)
        totals[(platform, workspace, start)] += cost
    if totals:
        op.bulk_insert(spend, [{'platform': p, 'workspace': w, 'starts_at': s, 'cost_usd': c}
                               for (p, w, s), c in totals.items()])


def downgrade() -> None:
    op.drop_table('spend')
