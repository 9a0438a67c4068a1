"""Storage: SQLAlchemy 2.x tables, the repositories and the unit of work (`store.tx()`), and Alembic migrations,
on SQLite and PostgreSQL alike.

It may use `core.models` and `core.when` only; every write the driver makes is fenced by the lease checked here.
"""
