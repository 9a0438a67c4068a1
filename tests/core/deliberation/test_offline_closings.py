"""The offline model's closings agree with the verdict they are given: nothing of theirs is withheld (through the
service, the offline model at the port)."""

from __future__ import annotations

import pytest

from bot.wiring import App
from core.models import Phase
from tests.core.conftest import settle, start


@pytest.mark.parametrize("flow", ["moderated", "council", "open"])
async def test_an_offline_closing_reads_the_verdict_it_was_given(app: App, flow: str) -> None:
    reply = await app.service.handle(start(flow=flow, rounds=1))
    await settle(app)
    async with app.store.tx() as tx:
        turns = await tx.turns(reply.discussion_id)
    [final] = [t for t in turns if t.phase == Phase.FINAL_SYNTHESIS]
    for t in [final, *(t for t in turns if t.phase == Phase.ROUND_SYNTHESIS)]:
        assert t.data is not None and not t.data.get("withheld"), t.text
        assert "Withheld" not in t.text and "**Verdict:**" in t.text
