"""The living header under pressure: people acting while turns are written, and later rounds' spend."""

from __future__ import annotations

import json

from adapters.slack.server import SlackServer
from core.models import Phase, Status
from tests.adapters.slack import skipping
from tests.adapters.slack.conftest import Slack
from tests.adapters.slack.test_threads import only
from tests.fakes.clock import settle
from tests.fakes.llm import ScriptedLLM
from tests.fakes.slack_api import FakeSlack

server = skipping.server  # the app on skipping time, in place of the conftest's

STATES = ("Pausing", "Paused", "Running", "Waiting for the next step")


def header_edits(fake: FakeSlack, ts: str) -> list[str]:
    """The state each edit of the header showed, in the order Slack received them."""
    edits = [json.dumps(u.params["blocks"], ensure_ascii=False) for u in fake.called("chat.update")
             if u.params.get("ts") == ts]
    return [next((s for s in STATES if s in e), "?") for e in edits]


async def test_a_pause_pressed_while_the_roster_is_written_is_never_undone_by_the_roster_header(
    slack: Slack, server: SlackServer, fake: FakeSlack, llm: ScriptedLLM
) -> None:
    async def pause() -> None:
        d = await only(server)
        await slack.click(d.thread_ref, "ctl:pause", d.id)
        # The click is answered at once; the pause is recorded just after, by the listener Bolt runs on after ack
        # (work in flight the server holds): a few loop passes start it, then the server's tasks end.
        await settle()
        await server.tasks.idle()
        assert (await only(server)).pending == "pause", "the pause was recorded"

    llm.on_phase[Phase.ROSTER] = pause
    await slack.command("Should we rewrite the billing service?")
    await server.idle()
    d = await only(server)
    assert d.status == Status.PAUSED
    shown = header_edits(fake, d.thread_ref)
    assert shown[0] == "Pausing" and shown[-1] == "Paused"
    assert "Running" not in shown, f"an older state came back over a newer one: {shown}"
    thread = fake.thread("C0001", d.thread_ref)
    assert not any("is thinking" in m.text for m in thread)
    assert not any("assembled the council" in m.text for m in thread), "the header shows the roster: no line says so"


async def test_the_header_shows_the_spend_at_the_end_of_each_round(
    slack: Slack, server: SlackServer, fake: FakeSlack, llm: ScriptedLLM
) -> None:
    llm.cost_per_call = 0.01
    await slack.command("Should we adopt OKRs?")
    await server.idle()
    d = await only(server)
    first = d.cost_usd
    [choice] = [m for m in fake.thread("C0001", d.thread_ref) if '"next:another_round"' in json.dumps(m.blocks)]
    await slack.click(choice.ts, "next:another_round", f"{d.id}|another_round")
    await server.idle()
    d = await only(server)
    assert d.round == 2 and d.status == Status.WAITING and d.cost_usd > first > 0
    top = fake.find("C0001", d.thread_ref)
    assert top is not None
    text = json.dumps(top.blocks, ensure_ascii=False)
    assert "Round 2 ·" in text and f"${d.cost_usd:.2f} spent" in text and f"${first:.2f} spent" not in text
