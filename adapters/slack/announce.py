"""A channel announcement (a digest) in Slack: ONE top-level message that names every discussion it covers;
what does not fit goes into replies in that message's own thread."""

from __future__ import annotations

import re
from dataclasses import dataclass

from slack_sdk.models.blocks import Block

from adapters.slack.markup import MD_LINK, escape, flat, link, mrkdwn, split_text, user_mentions
from adapters.slack.render import (
    EVENT_TYPE,
    MAX_BLOCKS,
    OFFLINE_LABEL,
    Message,
    actions_blocks,
    context,
    notification,
    opens_with_title,
    pack,
    render,
    roster_lines,
    section,
)
from core.models import Post

TOP_CHARS = 10_000  # block text of a top-level message that overflows (Slack refuses from ~11–13k)
HEADLINE_CHARS = 300
WIDTHS = (80, 64, 48, 40, 32, 24, 20, 16)  # topics in the index are shortened until every name fits
# A bullet that opens with a discussion's name: "- [topic](url) · …", "- [topic](url): …", "- “topic” · …".
_NAMED = re.compile(r"^\s*[-*+•]\s+(?:" + MD_LINK.pattern + r"|“([^”\n]{1,300})”)")


@dataclass(frozen=True)
class Name:
    """A discussion named in the post: its topic and, when it has one, the link to its thread."""

    topic: str
    url: str = ""

    def line(self, width: int) -> str:
        topic = self.topic if len(self.topic) <= width else self.topic[: width - 1].rstrip() + "…"
        return f"• {link(escape(self.url), escape(topic))}" if self.url else f"• “{escape(topic)}”"


def names(text: str) -> list[Name]:
    """The discussions named at the start of the post's bullets, each once, in order."""
    found: dict[str, Name] = {}
    for line in text.splitlines():
        m = _NAMED.match(line)
        if m:
            name = Name(m.group(1).strip(), m.group(2)) if m.group(2) else Name(m.group(3).strip())
            found.setdefault(name.url or name.topic, name)
    return list(found.values())


def index(everyone: list[Name], budget: int) -> str:
    """Every name with its link, topics as long as the budget allows (the shortest when nothing fits)."""
    text = ""
    for width in WIDTHS:
        text = f"*Discussions ({len(everyone)})*\n" + "\n".join(n.line(width) for n in everyone)
        if len(text) <= budget:
            break
    return text


def _size(paragraphs: list[str]) -> tuple[int, int]:
    """(characters, section blocks) these paragraphs take."""
    pieces = [piece for p in paragraphs for piece in split_text(p)]
    return sum(map(len, pieces)), len(pieces)


def _prefix(paragraphs: list[str], budget: int, blocks: int) -> int:
    """How many leading paragraphs fit in `budget` characters and `blocks` sections."""
    for n in range(len(paragraphs), 0, -1):
        chars, count = _size(paragraphs[:n])
        if chars <= budget and count <= blocks:
            return n
    return 0


def announcement(post: Post) -> tuple[Message, list[Message]]:
    """The top-level message and the replies for its thread (none when the post fits in one message)."""
    whole = render(post)
    if len(whole) == 1:
        return whole[0], []
    lead = user_mentions(post.mentions)
    raw = [p for p in post.text.split("\n\n") if p.strip()]  # paragraphs as the core wrote them
    title = [f"*{escape(post.title)}*"] if post.title and not opens_with_title(post) else []
    roster = [roster_lines(post.roster)] if post.roster else []
    paragraphs = [*title, *map(mrkdwn, raw), *roster]
    raw = [""] * len(title) + raw + [""] * len(roster)
    if lead:
        paragraphs[0] = f"{lead} {paragraphs[0]}"
    # In the order of the fullest list (the digest's "Discussions"), then any named only elsewhere.
    fullest = max((names(p) for p in raw), key=len, default=[])
    everyone = list(dict.fromkeys([*fullest, *names(post.text)]))
    room = MAX_BLOCKS - 4  # the footer, the offline label and the buttons take the rest
    shown = _prefix(paragraphs, TOP_CHARS, room)
    listing = ""
    if set(everyone) - set(names("\n".join(raw[:shown]))):  # some discussion would be named in the thread only
        listing = index(everyone, TOP_CHARS - HEADLINE_CHARS)
        chars, count = _size([listing])
        shown = _prefix(paragraphs, TOP_CHARS - chars, room - count)
    top = paragraphs[:shown] or [flat(paragraphs[0].split("\n", 1)[:1], HEADLINE_CHARS)]
    replies = pack([], paragraphs[shown:], [], post, offset=1) if paragraphs[shown:] else []
    blocks: list[Block] = [section(piece) for p in [*top, listing] for piece in split_text(p)]
    if replies:
        more = f"{len(replies)} more part{'s' if len(replies) > 1 else ''}"
        blocks.append(context(f"_The details continue in this message's thread ({more})._"))
    blocks += actions_blocks(post.actions)
    if post.offline:
        blocks.append(context(OFFLINE_LABEL))
    meta = {"event_type": EVENT_TYPE, "event_payload": {"key": post.replaces or post.key, "part": 0}}
    text = notification(top, post, lead)
    return Message(text=text, blocks=[b.to_dict() for b in blocks[:MAX_BLOCKS]], metadata=meta), replies
