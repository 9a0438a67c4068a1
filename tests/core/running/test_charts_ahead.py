"""The final synthesis's charts are drawn while its model writes it, not between the synthesis and its post: the
post takes the drawing made ahead (one drawing, not two), and a vote cast meanwhile draws them again."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.settings import Settings
from bot.wiring import build_app
from core.control.commands import StartDiscussion
from core.deliberation.offline import OfflineLLM
from core.models import Phase, Usage
from core.ports import Completion, Prompt, Searched, T, TextSink
from core.showing import charts, extras
from tests.fakes.chat import RecordingChat


class HeldSynthesis:
    """core.ports.LLM: the offline model, whose final synthesis waits until the test lets it answer."""

    offline = True

    def __init__(self) -> None:
        self.inner = OfflineLLM()
        self.writing, self.answer = asyncio.Event(), asyncio.Event()

    async def _hold(self, prompt: Prompt) -> None:
        if prompt.purpose.phase == Phase.FINAL_SYNTHESIS:
            self.writing.set()
            await self.answer.wait()

    async def complete(self, prompt: Prompt, on_text: TextSink | None = None) -> Completion:
        await self._hold(prompt)
        return await self.inner.complete(prompt, on_text)

    async def structured(self, prompt: Prompt, schema: type[T]) -> tuple[T, Usage]:
        await self._hold(prompt)
        return await self.inner.structured(prompt, schema)

    def worst_case_usd(self, prompt: Prompt, *, search: bool = False) -> float:
        return self.inner.worst_case_usd(prompt, search=search)

    async def search(self, prompt: Prompt) -> Searched:
        return await self.inner.search(prompt)


def drawn() -> int:
    """Charts drawn so far in this process (each chart kind caches its pictures by what they show)."""
    return sum(f.cache_info().misses for f in (charts._vote_png, charts._stance_png))


async def test_the_final_synthesis_s_charts_are_drawn_while_its_model_writes_and_posted_as_drawn(
        tmp_path: Path) -> None:
    for f in (charts._vote_png, charts._stance_png):
        f.cache_clear()
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'council.db'}")  # type: ignore[call-arg]
    chat, llm = RecordingChat(), HeldSynthesis()
    app = await build_app(settings, {"slack": chat}, llm=llm, owner="test")
    try:
        reply = await app.service.handle(StartDiscussion(topic="Should we adopt trunk-based development?", experts=4,
                                                         user_id="u1", user_name="Test", flow="meeting", rounds=2,
                                                         platform="slack", channel="C1", workspace="T1"))
        d_id = reply.discussion_id
        await llm.writing.wait()
        assert d_id in extras._AHEAD  # started with the synthesis's turn, before its model answered
        ahead = await extras._AHEAD[d_id][1]
        assert ahead and drawn() == len(ahead)  # every chart of the post, drawn once
        llm.answer.set()
        await app.driver.idle()
        final = next(s.post for s in chat.sent if s.post.key == f"{d_id}:final:r2")
        # The post took the very drawing made ahead, not the same pictures drawn again (or found in the cache).
        assert len(final.files) == len(ahead) and all(f is a for f, a in zip(final.files, ahead, strict=True))
        assert drawn() == len(ahead)
        assert d_id not in extras._AHEAD
    finally:
        await app.close()


async def test_a_terminal_s_final_synthesis_draws_nothing_ahead(tmp_path: Path) -> None:
    """The console shows no charts with the post (its exports draw them after the vote): nothing is drawn ahead."""
    for f in (charts._vote_png, charts._stance_png):
        f.cache_clear()
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'council.db'}")  # type: ignore[call-arg]
    chat, llm = RecordingChat(), HeldSynthesis()
    app = await build_app(settings, {"console": chat}, llm=llm, owner="test")
    try:
        reply = await app.service.handle(StartDiscussion(topic="Should we adopt trunk-based development?", experts=4,
                                                         user_id="u1", user_name="Test", flow="meeting", rounds=2))
        await llm.writing.wait()
        assert reply.discussion_id not in extras._AHEAD
        llm.answer.set()
        await app.driver.idle()
        final = next(s.post for s in chat.sent if s.post.key == f"{reply.discussion_id}:final:r2")
        assert final.files == [] and drawn() == 0
    finally:
        await app.close()
