"""Service fixtures: the real app wired to a recording chat and the scripted offline model."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.settings import Settings
from bot.wiring import App, build_app
from core.control import commands as c
from core.models import Discussion
from core.storage.db import make_engine, migrate
from core.storage.store import Store
from tests.fakes.chat import RecordingChat
from tests.fakes.llm import ScriptedLLM


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    """A migrated database of the test's kind (db_url: SQLite, or PostgreSQL in CI), nothing in it."""
    engine = make_engine(db_url)
    await migrate(engine)
    s = Store(engine)
    yield s
    await s.close()


@pytest.fixture
def chat() -> RecordingChat:
    return RecordingChat("console")


@pytest.fixture
def llm(request: pytest.FixtureRequest) -> ScriptedLLM:
    """The offline model; `@pytest.mark.parametrize("llm", [seconds], indirect=True)` gives it that pretend latency
    (a fresh one for each test, never one built at import and shared)."""
    return ScriptedLLM(delay=getattr(request, "param", 0.0))


@pytest.fixture
async def app(sqlite_url: str, chat: RecordingChat, llm: ScriptedLLM) -> AsyncIterator[App]:
    settings = Settings(_env_file=None, database_url=sqlite_url)  # type: ignore[call-arg]
    application = await build_app(settings, {"console": chat}, llm=llm)
    yield application
    # The test has asserted what it means to: a discussion it left running is stopped, as a restart would stop it,
    # instead of being driven to its end (a whole council's worth of turns after the test is over).
    await application.close(grace_s=0)


C1 = {"in_channel": "C1"}  # commands come from the discussions' channel


def start(topic: str = "Should we move to trunk-based development?", **kw: object) -> c.StartDiscussion:
    return c.StartDiscussion(**C1, topic=topic, platform="console", channel="C1", user_id="U1", user_name="Dana", **kw)  # type: ignore[arg-type]


async def settle(app: App) -> None:
    await app.driver.idle()


async def discussion(app: App, discussion_id: str) -> Discussion:
    async with app.store.tx() as tx:
        d = await tx.discussion(discussion_id)
    assert d is not None
    return d
