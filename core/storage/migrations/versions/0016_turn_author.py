"""who wrote each turn (the persona's model, the AI stand-in for a seat's person, the person, Council itself), kept
on the turn: labels and the "(unverified)" marker read it instead of guessing from names or text

Revision ID: 0016
Revises: 0015
"""

from alembic import op
import sqlalchemy as sa


revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('turns', schema=None) as batch_op:
        batch_op.add_column(sa.Column('author', sa.String(length=16), nullable=False, server_default='persona'))
    # A seat's wait says who took its turn: "done" when the person's reply was recorded, "stand_in" or "back"
    # when the AI stand-in spoke; the roster is Council's own listing.
    op.execute("UPDATE turns SET author = 'person' WHERE key IN (SELECT turn_key FROM seat_waits "
               "WHERE state = 'done')")
    op.execute("UPDATE turns SET author = 'stand_in' WHERE key IN (SELECT turn_key FROM seat_waits "
               "WHERE state IN ('stand_in', 'back'))")
    op.execute("UPDATE turns SET author = 'bot' WHERE phase = 'roster'")


def downgrade() -> None:
    with op.batch_alter_table('turns', schema=None) as batch_op:
        batch_op.drop_column('author')
