"""The checks one person may ask for in a discussion, asked all at once through the real service and store on both
backends: counted and inserted as one step, so exactly the limit get in."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.settings import Settings
from bot.wiring import build_app
from core.control import commands as c
from core.control.replies import UserError
from core.deliberation import factcheck
from core.models import Phase, Status
from tests.fakes.chat import RecordingChat
from tests.fakes.llm import ScriptedLLM


async def test_checks_asked_at_once_by_one_person_let_exactly_the_limit_through(db_url: str, tmp_path: Path) -> None:
    llm = ScriptedLLM()
    settings = Settings(_env_file=None, database_url=db_url)  # type: ignore[call-arg]
    app = await build_app(settings, {"console": RecordingChat()}, llm=llm)
    try:
        reply = await app.service.handle(c.StartDiscussion(topic="Should we move to trunk-based development?",
                                                           experts=3, rounds=3, user_id="U1"))
        await app.driver.idle()
        async with app.store.tx() as tx:
            d = await tx.discussion(reply.discussion_id)
            claims = [t for t in await tx.turns(reply.discussion_id) if factcheck.offered(t)]
        assert d is not None and d.status == Status.DONE
        assert len(claims) > factcheck.CHECKS_PER_PERSON + 2, "more posts to check than one person may ask for"
        gate = llm.hold()  # the checks that get in wait on the model: only the asking is raced here
        asked = await asyncio.gather(*(app.service.handle(c.CheckClaims(discussion_id=d.id, turn_key=t.key,
                                                                        user_id="U2", in_channel=""))
                                       for t in claims), return_exceptions=True)
        async with app.store.tx() as tx:
            checks = [t for t in await tx.turns(d.id) if t.phase == Phase.FACT_CHECK and factcheck.asked_by(t) == "U2"]
        gate.set()
        await app.driver.idle()
    finally:
        await app.close()
    taken = [r for r in asked if not isinstance(r, BaseException)]
    refused = [r for r in asked if isinstance(r, UserError)]
    assert len(taken) == factcheck.CHECKS_PER_PERSON and len(checks) == factcheck.CHECKS_PER_PERSON, asked
    assert len(refused) == len(claims) - factcheck.CHECKS_PER_PERSON
    assert all("the most one person may ask" in str(r) for r in refused)
