"""Alembic environment: runs on the connection handed in by core.storage.db.migrate."""

from alembic import context

from core.storage.tables import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise SystemExit("run migrations with `python -m bot migrate`")

context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
