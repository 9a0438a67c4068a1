"""One vocabulary in Slack, end to end: the real anthropic SDK on the loopback Messages API and the real Slack app
(signed payloads, a poll click). A persona naming "Do not adopt" is never counted for "Adopt", an unreadable stance
is shown so, the Contrarian is shown aside, and a person's vote edits the verdict under the synthesis in place and
in the decision record."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from adapters.web.page import render
from adapters.web.view import page
from core.showing.export import export
from tests.adapters.slack.on_model import app_on_model
from tests.fakes.anthropic_server import FakeAnthropic, default_reply
from tests.fakes.slack_api import FakeSlack

ADOPT, DO_NOT = "Adopt trunk-based development", "Do not adopt trunk-based development"
_PERSONA = re.compile(r'only as them:\n<persona name="([^"]*)" role="([^"]*)"')


def _last_text(body: dict[str, Any]) -> str:
    last = body["messages"][-1]["content"]
    return last if isinstance(last, str) else "\n".join(b.get("text", "") for b in last if b.get("type") == "text")


class Council:
    """The model's side: syntheses propose Adopt and Do not adopt; in round 2 one expert names O1 by id, the other
    names the other option by its whole label, the Contrarian agrees with the first, and round 1 is unreadable."""

    def __init__(self) -> None:
        self.experts: list[str] = []

    def __call__(self, body: dict[str, Any]) -> str:
        fmt = (body.get("output_config") or {}).get("format") or {}
        if fmt.get("type") == "json_schema":
            value = json.loads(default_reply(body))
            if "experts" in value or "question" in value:  # no answers framed: no opening options
                value |= {"options": []}
            # The moderator writes who backs what in prose fields: everyone behind proposal 2. Nothing reads it.
            backs_two = [{"persona": name, "proposal": 2} for name in self.experts]
            if "proposals" in value:
                value |= {"proposals": [ADOPT, DO_NOT], "positions": backs_two}
            if "recommendations" in value:
                value |= {"recommendations": [ADOPT, DO_NOT], "positions": backs_two}
            return json.dumps(value)
        text = _last_text(body)
        if "Stance: <label>" not in text:
            return default_reply(body)
        who = _PERSONA.search(text)
        name, role = (who.group(1), who.group(2)) if who else ("", "")
        if "O1:" not in text:  # round 1: nothing on the table yet; a label that is no position
            label = "adopt trunk-based development, probably"
        elif role == "contrarian":
            label = "O1"
        else:
            if name not in self.experts:
                self.experts.append(name)
            label = "O1" if self.experts.index(name) == 0 else DO_NOT
        return f"My view, in a few sentences.\n\nStance: {label} — my reason"


@pytest.fixture
def council() -> Council:
    return Council()


@pytest.fixture
async def anthropic(council: Council) -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic(reply=council) as server:
        yield server


async def test_a_vote_in_slack_refreshes_the_verdict_and_do_not_adopt_never_counts_as_adopt(
        fake: FakeSlack, anthropic: FakeAnthropic, council: Council, tmp_path: Path) -> None:
    async with app_on_model(fake, anthropic.base_url, tmp_path) as (slack, server):
        await slack.command("Should we adopt trunk-based development? --rounds 2 --experts 2")
        await server.idle()
        assert server.core is not None
        [d] = await server.core.service.guard.discussions()
        assert d.status.value == "done", d.blocked_reason

        def shown(m: Any) -> str:
            return m.text + json.dumps(m.blocks, ensure_ascii=False)

        thread = fake.thread("C0001", d.thread_ref)
        [final] = [m for m in thread if "Final synthesis" in shown(m)]
        before = shown(final)
        # Round 2: one expert chose Adopt [O1], every other one Do not adopt [O2] by its whole label; the
        # Contrarian's O1 is shown aside and counts for nothing.
        n = len(council.experts)
        assert n >= 2 and f"personas: {DO_NOT} [O2] {n - 1} · {ADOPT} [O1] 1 of {n}" in before, before
        assert f"the Contrarian (not counted): {ADOPT} [O1]" in before
        assert f"{ADOPT} [O1] {n}" not in before and "CONSENSUS" not in before
        first = [m for m in thread if "Round 1" in shown(m) and "synthesis" in shown(m).lower()]
        assert first and "undecided (unreadable)" in shown(first[0])  # round 1's labels named no position

        poll = [m for m in thread if '"vote:1"' in json.dumps(m.blocks)][-1]
        value = next(e for b in poll.blocks if b["type"] == "actions" for e in b["elements"]
                     if e["action_id"] == "vote:1")["value"]
        await slack.click(poll.ts, "vote:1", value, user="U0002")
        await server.idle()
        after = shown(fake.find("C0001", final.ts))
        assert f"people: {DO_NOT} [O2] 1 of 1" in after and "people: no votes" in before, after
        async with server.core.store.tx() as tx:
            [record] = await tx.decisions_found("slack", "T0001", None)
        assert f"people: {DO_NOT} [O2] 1 of 1" in record.verdict
        assert record.verdict.split(" — ")[0] in after  # the post and the record give the same verdict
        # The page and the export: the same verdict, and who backed which option from the recorded choices.
        doc = await export(server.core.store, d.id)
        assert doc is not None and doc["closing"]["verdict"] == record.verdict
        html = render(doc)
        backed = [s for s in page(doc)["stances"] if s["round"] == 2]
        assert [sorted(r["choice"] for r in s["rows"] if r["counted"]) for s in backed] == [["O1", *["O2"] * (n - 1)]]
        assert f"<td>{council.experts[0]}</td><td>{ADOPT} [O1]</td>" in html
        assert f"<td>{council.experts[0]}</td><td>{DO_NOT}" not in html
