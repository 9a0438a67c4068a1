"""The App Home tab for one person (pure): their discussions, schedules and digests, a start button, admin facts."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ContextBlock,
    DividerBlock,
    HeaderBlock,
    PlainTextObject,
    SectionBlock,
)
from slack_sdk.models.blocks.basic_components import MarkdownTextObject
from slack_sdk.models.views import View

from adapters.slack.markup import date_token, escape
from core.models import Decision, Discussion, Schedule, Status
from core.showing.moments import Moment

NEW_ACTION = "home:new"
CANCEL_ACTION = "home:cancel"
MAX_DISCUSSIONS = 20  # a Home view holds at most 100 blocks
MAX_DECISIONS = 10
MAX_LOGS = 5  # channels whose decision logs the Home links to
OPEN = (Status.RUNNING, Status.WAITING, Status.PAUSED, Status.AWAITING_CONFIRMATION, Status.BLOCKED)


@dataclass
class Row:
    discussion: Discussion
    thread: str = ""  # permalink of the thread
    page: str = ""  # signed link to the page


@dataclass
class HomeFacts:
    user: str
    rows: list[Row] = field(default_factory=list)
    schedules: list[Schedule] = field(default_factory=list)
    admin: bool = False
    spend_today: float = 0.0
    defaults: dict[str, str] = field(default_factory=dict)
    decisions: list[Decision] = field(default_factory=list)  # recent records of the person's channels
    logs: list[tuple[str, str]] = field(default_factory=list)  # (channel, or "" for the workspace's; signed link)


def when(moment: datetime | None, tz: str = "UTC") -> str:
    """A time every reader sees in their own zone (Slack's date token), the fallback in the zone `tz`."""
    if moment is None:
        return "not scheduled"
    return date_token(Moment(int(moment.timestamp()), tz or "UTC"))


def _links(row: Row) -> str:
    parts = [f"<{escape(row.thread)}|thread>" if row.thread else "", f"<{escape(row.page)}|page>" if row.page else ""]
    return " · ".join(p for p in parts if p)


def _discussion(row: Row) -> SectionBlock:
    d = row.discussion
    topic = escape(d.topic if len(d.topic) <= 150 else d.topic[:149] + "…")
    line = (f"*{topic}*\n{d.status.value.replace('_', ' ')} · round {d.round} · ${d.cost_usd:.2f} · started "
            f"{when(d.created_at, d.tz)}")
    links = _links(row)
    return SectionBlock(text=MarkdownTextObject(text=line + (f"\n{links}" if links else "")))


def _decision(d: Decision) -> SectionBlock:
    topic = escape(d.topic if len(d.topic) <= 150 else d.topic[:149] + "…")
    decided = escape(d.decided if len(d.decided) <= 300 else d.decided[:299] + "…")
    link = f" · <{escape(d.link)}|thread>" if d.link else ""
    return SectionBlock(text=MarkdownTextObject(
        text=f"*{topic}*\n<#{escape(d.channel)}> · {when(d.decided_at)} · {escape(d.flow)}{link}\n{decided}"))


def _log_link(channel: str, url: str) -> str:
    """A channel's log as the channel's name and a link (a link's label cannot hold a channel mention)."""
    return f"<#{escape(channel)}> <{escape(url)}|log>" if channel else f"<{escape(url)}|the whole workspace's log>"


def _schedule(s: Schedule) -> SectionBlock:
    what = f"Rounds of `{escape(s.target)}`" if s.kind == "round" else f"Digest in <#{escape(s.target)}>"
    cancel = ButtonElement(text=PlainTextObject(text="Cancel"), action_id=f"{CANCEL_ACTION}:{s.kind}",
                           value=f"{s.id}|{s.target}", style="danger")
    return SectionBlock(text=MarkdownTextObject(text=f"{what}\nnext: {when(s.next_run_at, s.tz)}"), accessory=cancel)


def home_view(facts: HomeFacts) -> dict[str, Any]:
    open_first = sorted(facts.rows, key=lambda r: (r.discussion.status not in OPEN,
                                                    -r.discussion.created_at.timestamp()))[:MAX_DISCUSSIONS]
    blocks: list[Block] = [
        HeaderBlock(text=PlainTextObject(text="Council")),
        ActionsBlock(block_id="home_actions", elements=[ButtonElement(
            text=PlainTextObject(text="New discussion"), action_id=NEW_ACTION, style="primary")]),
        SectionBlock(text=MarkdownTextObject(text="*Your discussions*")),
    ]
    if open_first:
        blocks += [_discussion(r) for r in open_first]
    else:
        blocks.append(ContextBlock(elements=[MarkdownTextObject(
            text="None yet: start one with the button above or `/council <topic>` in a channel.")]))
    blocks += [DividerBlock(), SectionBlock(text=MarkdownTextObject(text="*Recent decisions in your channels*"))]
    if facts.decisions:
        blocks += [_decision(d) for d in facts.decisions[:MAX_DECISIONS]]
    else:
        blocks.append(ContextBlock(elements=[MarkdownTextObject(
            text="None yet: every finished discussion leaves one; `/council decisions` searches them.")]))
    if facts.logs:
        links = " · ".join(_log_link(ch, url) for ch, url in facts.logs)
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=f"Decision logs, to browse and search: {links}")]))
    blocks += [DividerBlock(), SectionBlock(text=MarkdownTextObject(text="*Your schedules and digests*"))]
    if facts.schedules:
        blocks += [_schedule(s) for s in facts.schedules[:20]]
    else:
        blocks.append(ContextBlock(elements=[MarkdownTextObject(
            text="None. `--every 1d` on a discussion, or `/council digest daily` in a channel, sets one.")]))
    if facts.admin:
        defaults = " · ".join(f"{k}: {escape(v)}" for k, v in facts.defaults.items())
        blocks += [DividerBlock(), SectionBlock(text=MarkdownTextObject(
            text=f"*Workspace (admins)*\nSpent today: ${facts.spend_today:.2f}\n{defaults}"))]
    return View(type="home", blocks=blocks[:100]).to_dict()
