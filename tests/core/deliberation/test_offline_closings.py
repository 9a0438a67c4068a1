"""The offline model's closings agree with the verdict they are given: nothing of theirs is withheld (through the
service, the offline model at the port)."""

from __future__ import annotations

import pytest

from bot.wiring import App
from core.models import Phase
from tests.core.conftest import settle, start
from tests.fakes.chat import RecordingChat


@pytest.mark.parametrize("flow", ["moderated", "council", "open"])
async def test_an_offline_closing_reads_the_verdict_it_was_given(app: App, chat: RecordingChat, flow: str) -> None:
    reply = await app.service.handle(start(flow=flow, rounds=1))
    await settle(app)
    async with app.store.tx() as tx:
        [final] = [t for t in await tx.turns(reply.discussion_id) if t.phase == Phase.FINAL_SYNTHESIS]
    assert final.data is not None and not final.data.get("withheld"), final.text
    assert "Withheld" not in final.text and "**Verdict:**" in final.text
