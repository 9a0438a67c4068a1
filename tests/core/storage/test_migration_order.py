"""The migrations read in the order they apply: file NNNN_… is revision NNNN, revises NNNN-1, one head; and the
chain upgrades an empty database on both backends."""

from __future__ import annotations

from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import text

from core.storage.db import MIGRATIONS, make_engine, migrate


def test_each_file_is_numbered_where_it_applies() -> None:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    scripts = ScriptDirectory.from_config(cfg)
    assert len(scripts.get_heads()) == 1, "one head"
    applied = list(reversed(list(scripts.walk_revisions())))  # base first
    assert [s.revision for s in applied] == [f"{n:04d}" for n in range(1, len(applied) + 1)]
    for before, script in zip([None, *applied], applied, strict=False):
        assert script.down_revision == (before.revision if before else None)
        assert script.path.rsplit("/", 1)[-1].startswith(f"{script.revision}_"), script.path


async def test_an_empty_database_upgrades_to_the_head(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        await migrate(engine)
        async with engine.connect() as conn:
            version = (await conn.execute(text("SELECT version_num FROM alembic_version"))).scalar_one()
    finally:
        await engine.dispose()
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    assert version == ScriptDirectory.from_config(cfg).get_current_head()
