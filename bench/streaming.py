"""Live text on Slack: a fake model takes 2 s to its first token, then writes slowly; the real Anthropic client,
driver and SlackChat run against the fake APIs. Prints, per persona turn, the delay from the model's first token
to the first words visible in the thread, and how many visible updates the long opening turn gets; the last
worst first-words delay is the figure (target <= 1.0 s), and every one of the three turns must show its words as they
come (the workspace is quiet); exits 1 on a miss."""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from adapters.slack.budgeted import slack_budget  # noqa: E402
from adapters.slack.chat import SlackChat  # noqa: E402
from adapters.slack.clients import SingleWorkspace, web_client  # noqa: E402
from bench.verdict import Figure, add_target_flag, overrides, report  # noqa: E402
from bot.settings import Settings  # noqa: E402
from bot.wiring import build_app  # noqa: E402
from core.control import commands as c  # noqa: E402
from core.models import Status  # noqa: E402
from core.running.budget import LocalBuckets  # noqa: E402
from tests.fakes.anthropic_server import FakeAnthropic, default_reply  # noqa: E402
from tests.fakes.slack_api import FakeSlack  # noqa: E402

WORDS = ("Trunk-based development keeps every change small and visible, so integration problems surface within "
         "hours instead of weeks. ").split()


TURNS = 3  # the opening and the two statements written at once


def long_reply(chars: int) -> Any:
    """Structured calls get their JSON; every free-text turn a long answer led by a unique tag `[n]`."""
    numbers = itertools.count(1)

    def reply(body: dict[str, Any]) -> str:
        if (body.get("output_config") or {}).get("format"):
            return default_reply(body)
        words = [f"[{next(numbers)}]"]
        while len(" ".join(words)) < chars:
            words += WORDS
        return " ".join(words)[:chars]

    return reply


async def main(first_token_s: float, gap_s: float, chars: int, targets: dict[str, float], scale: float = 1.0) -> int:
    """`scale`: Slack's seconds (its limits, the live-edit gap) and the model's run this much faster."""
    first_token_s, gap_s = first_token_s / scale, gap_s / scale
    async with FakeAnthropic(latency_s=first_token_s, delta_gap_s=gap_s, chunk_chars=24,
                             reply=long_reply(chars)) as model, FakeSlack() as slack:
        with tempfile.TemporaryDirectory() as tmp:
            settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}",  # type: ignore[call-arg]
                                anthropic_api_key="bench-key", anthropic_base_url=model.base_url)
            budget = slack_budget(LocalBuckets(), scale=scale)  # Slack's limits, as the app spends them
            chat = SlackChat(SingleWorkspace(web_client(slack.base_url, "xoxb-test"), budget), time_scale=scale)
            app = await build_app(settings, {"slack": chat})
            try:
                reply = await app.service.handle(c.StartDiscussion(
                    topic="Should we move to trunk-based development?", platform="slack", workspace="T0001",
                    channel="C0001", experts=2, rounds=1, user_id="U1", user_name="Dana"))
                # The opening (one long turn) and the two statements written at once; then stop.
                deadline = time.monotonic() + 120
                while len([t for t in model.first_delta_at if t.startswith("[")]) < TURNS:
                    if time.monotonic() > deadline:
                        raise RuntimeError("the discussion never reached its statements; see the log above")
                    await asyncio.sleep(0.05)
                # Until each of those turns is posted whole (its words no longer shown as being written).
                while not all(posted(slack, tag) for tag in tags(model)[:TURNS]):
                    if time.monotonic() > deadline:
                        raise RuntimeError("the statements were never posted; see the log above")
                    await asyncio.sleep(0.05)
                await app.service.handle(c.Stop(discussion_id=reply.discussion_id, user_id="U1", platform="slack",
                                                  workspace="T0001", in_channel="C0001"))
                await app.driver.idle()
                async with app.store.tx() as tx:
                    d = await tx.discussion(reply.discussion_id)
                assert d is not None and d.status == Status.STOPPED
            finally:
                await app.close()
        worst, shown = delays(model, slack)
    # Every turn ran to its end before the stop: in a quiet workspace each must have shown its words as they came.
    # In Slack's seconds: a run sped up `scale` times is judged as the same run at Slack's own speed.
    return report([Figure("first_words_delay", worst * scale, 1.0, "s"),
                   Figure("turns_with_live_text", shown, TURNS, at_most=False)], targets)


def tags(model: FakeAnthropic) -> list[str]:
    """The tags of the model's free-text turns so far, `[1]`, `[2]`, ..., in the order they began."""
    return [_tag(text) for text in model.first_delta_at if text.startswith("[")]


def _tag(text: str) -> str:
    return text.split(" ", 1)[0]


def posted(slack: FakeSlack, tag: str) -> bool:
    """Whether the turn tagged `tag` is in the thread as its post: shown, and no longer as being written."""
    return any(tag in f"{m.text} {m.blocks}" and "is writing" not in f"{m.text} {m.blocks}" for m in slack.messages)


def delays(model: FakeAnthropic, slack: FakeSlack) -> tuple[float, int]:
    """Prints each turn's delay to its first visible words; returns the worst (NaN when none was seen), and how
    many of the model's turns showed any."""
    updates = [call for call in slack.called("chat.update") if "is writing" in str(call.params.get("text"))]
    delays, counts = [], []
    for text, first_token in sorted(model.first_delta_at.items(), key=lambda kv: kv[1]):
        if not text.startswith("["):
            continue
        tag = _tag(text)
        mine = [u for u in updates if tag in str(u.params.get("blocks"))]
        if not mine:
            print(f"turn {tag}: no words shown before its post")
            continue
        delay = mine[0].at - first_token
        delays.append(delay)
        counts.append(len(mine))
        print(f"turn {tag}: first words {delay:.3f} s after the first token; {len(mine)} visible updates")
    if not delays:
        return float("nan"), 0
    print(f"turns measured: {len(delays)}; median first-words delay {statistics.median(delays):.3f} s")
    print(f"visible updates of the first turn shown: {counts[0]}")
    return max(delays), len(delays)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--first-token-s", type=float, default=2.0)
    parser.add_argument("--gap-s", type=float, default=0.1, help="pause between streamed deltas of 24 characters")
    parser.add_argument("--chars", type=int, default=1500, help="length of each free-text turn")
    parser.add_argument("--scale", type=float, default=1.0, help="Slack's and the model's seconds run this much faster")
    add_target_flag(parser)
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.first_token_s, args.gap_s, args.chars, overrides(args.target), args.scale)))
