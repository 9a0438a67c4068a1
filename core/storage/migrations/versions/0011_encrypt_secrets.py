"""stored credentials encrypted at rest: the Slack OAuth installation store's tokens (and webhook URLs) are
encrypted with COUNCIL_ENCRYPTION_KEY and their columns widened for the ciphertext; and each running turn's
reservation of its workspace's daily budget

Revision ID: 0011
Revises: 0010
"""

import os

from alembic import op
import sqlalchemy as sa


revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None

# slack_sdk's SQLAlchemy installation store creates these tables itself (when OAuth is configured).
SECRETS = {
    'slack_installations': ('bot_token', 'bot_refresh_token', 'user_token', 'user_refresh_token',
                            'incoming_webhook_url'),
    'slack_bots': ('bot_token', 'bot_refresh_token'),
}


def _key() -> str:
    config = op.get_context().config
    given = config.attributes.get('encryption_key') if config is not None else None
    return given or os.environ.get('COUNCIL_ENCRYPTION_KEY', '')


def upgrade() -> None:
    with op.batch_alter_table('turns') as batch:
        batch.add_column(sa.Column('reserved_usd', sa.Float(), nullable=False, server_default='0'))
        batch.add_column(sa.Column('reserved_at', sa.DateTime(timezone=True), nullable=True))
    bind = op.get_bind()
    present = set(sa.inspect(bind).get_table_names())
    for table_name, columns in SECRETS.items():
        if table_name not in present:
            continue
        if bind.dialect.name == 'postgresql':  # ciphertext is longer than VARCHAR(200); SQLite does not care
            for column in columns:
                op.alter_column(table_name, column, type_=sa.Text())
        _encrypt(bind, table_name, columns)


def _encrypt(bind, table_name: str, columns: tuple) -> None:
    from core.storage.sealing import Sealer

    table = sa.Table(table_name, sa.MetaData(), autoload_with=bind)
    rows = bind.execute(sa.select(table.c.id, *(table.c[c] for c in columns))).all()
    if not any(value for row in rows for value in row[1:]):
        return
    sealer = Sealer.from_keys(_key())  # BadKey, naming COUNCIL_ENCRYPTION_KEY, when it is not set
    for row in rows:
        values = {c: v for c, v in zip(columns, row[1:]) if v and not sealer.sealed(v)}
        if values:
            bind.execute(sa.update(table).where(table.c.id == row[0]).values(
                **{c: sealer.seal(v) for c, v in values.items()}))


def downgrade() -> None:
    with op.batch_alter_table('turns') as batch:
        batch.drop_column('reserved_at')
        batch.drop_column('reserved_usd')
