"""decision records searched with the database's own full-text index (SQLite FTS5, PostgreSQL tsvector + GIN),
and the stored deadlines of seats held by people

Revision ID: 0009
Revises: 0008
"""

from alembic import op
import sqlalchemy as sa


revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'decisions',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('discussion_id', sa.String(length=32), nullable=False),
        sa.Column('platform', sa.String(length=16), nullable=False),
        sa.Column('workspace', sa.String(length=64), nullable=False),
        sa.Column('channel', sa.String(length=64), nullable=False),
        sa.Column('topic', sa.Text(), nullable=False),
        sa.Column('flow', sa.String(length=32), nullable=False),
        sa.Column('decided', sa.Text(), nullable=False),
        sa.Column('verdict', sa.Text(), nullable=False),
        sa.Column('stances', sa.JSON(), nullable=False),
        sa.Column('people', sa.JSON(), nullable=False),
        sa.Column('link', sa.Text(), nullable=False),
        sa.Column('decided_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['discussion_id'], ['discussions.id'], name='fk_decisions_discussion_id_discussions'),
        sa.PrimaryKeyConstraint('id', name='pk_decisions'),
        sa.UniqueConstraint('discussion_id', name='uq_decisions_discussion_id'),
    )
    op.create_index('ix_decisions_place', 'decisions', ['platform', 'workspace', 'channel', 'decided_at'])
    if op.get_bind().dialect.name == 'postgresql':
        op.execute("ALTER TABLE decisions ADD COLUMN search tsvector GENERATED ALWAYS AS "
                   "(to_tsvector('english', topic || ' ' || decided || ' ' || verdict)) STORED")
        op.execute("CREATE INDEX ix_decisions_search ON decisions USING GIN (search)")
    else:
        op.execute("CREATE VIRTUAL TABLE decisions_fts USING fts5(topic, decided, verdict, content='decisions', "
                   "content_rowid='id', tokenize='porter unicode61')")
        op.execute("CREATE TRIGGER decisions_ai AFTER INSERT ON decisions BEGIN INSERT INTO decisions_fts"
                   "(rowid, topic, decided, verdict) VALUES (new.id, new.topic, new.decided, new.verdict); END")
        op.execute("CREATE TRIGGER decisions_ad AFTER DELETE ON decisions BEGIN INSERT INTO decisions_fts"
                   "(decisions_fts, rowid, topic, decided, verdict) VALUES ('delete', old.id, old.topic, "
                   "old.decided, old.verdict); END")
        op.execute("CREATE TRIGGER decisions_au AFTER UPDATE ON decisions BEGIN INSERT INTO decisions_fts"
                   "(decisions_fts, rowid, topic, decided, verdict) VALUES ('delete', old.id, old.topic, "
                   "old.decided, old.verdict); INSERT INTO decisions_fts(rowid, topic, decided, verdict) "
                   "VALUES (new.id, new.topic, new.decided, new.verdict); END")
    op.create_table(
        'seat_waits',
        sa.Column('turn_key', sa.String(length=160), nullable=False),
        sa.Column('discussion_id', sa.String(length=32), nullable=False),
        sa.Column('persona_key', sa.String(length=64), nullable=False),
        sa.Column('user_id', sa.String(length=64), nullable=False),
        sa.Column('asked_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('nudge_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('deadline', sa.DateTime(timezone=True), nullable=False),
        sa.Column('state', sa.String(length=16), nullable=False),
        sa.Column('answer', sa.Text(), nullable=False),
        sa.Column('stance', sa.String(length=80), nullable=False),
        sa.ForeignKeyConstraint(['discussion_id'], ['discussions.id'], name='fk_seat_waits_discussion_id_discussions'),
        sa.PrimaryKeyConstraint('turn_key', name='pk_seat_waits'),
    )
    op.create_index('ix_seat_waits_discussion_id', 'seat_waits', ['discussion_id'])
    op.create_index('ix_seat_waits_due', 'seat_waits', ['state', 'deadline'])


def downgrade() -> None:
    op.drop_table('seat_waits')
    if op.get_bind().dialect.name != 'postgresql':
        for trigger in ('decisions_ai', 'decisions_ad', 'decisions_au'):
            op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        op.execute("DROP TABLE IF EXISTS decisions_fts")
    op.drop_table('decisions')
