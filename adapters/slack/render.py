"""Block Kit for the core's posts (slack_sdk.models.blocks): mrkdwn, size limits, long turns split."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ContextBlock,
    HeaderBlock,
    MarkdownTextObject,
    PlainTextObject,
    SectionBlock,
)

from core.models import Action, Persona, Post, Role

EVENT_TYPE = "council_post"
THINKING_EVENT = "council_thinking"
SECTION_CHARS = 2900  # Slack's section text limit is 3,000
MESSAGE_CHARS = 9000  # stay well under ~11k characters of block text per message
MAX_BLOCKS = 50
BUTTON_CHARS = 75
OFFLINE_LABEL = "⚠️ _Offline model: these words were not written by an AI. Set ANTHROPIC_API_KEY for real answers._"
ROLE_LABELS = {Role.MODERATOR: "moderator", Role.HISTORIAN: "historian", Role.CONTRARIAN: "contrarian",
               Role.CROSS_DOMAIN: "cross-domain thinker", Role.EXPERT: "expert"}


@dataclass
class Message:
    """One chat.postMessage / chat.update worth of arguments."""

    text: str
    blocks: list[dict[str, Any]]
    username: str | None = None
    icon_emoji: str | None = None
    icon_url: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def args(self) -> dict[str, Any]:
        out: dict[str, Any] = {"text": self.text, "blocks": self.blocks}
        for name in ("username", "icon_emoji", "icon_url"):
            if getattr(self, name):
                out[name] = getattr(self, name)
        if self.metadata:
            out["metadata"] = self.metadata
        return out


# text -------------------------------------------------------------------------------------------
def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def mrkdwn(text: str) -> str:
    """The core's light Markdown to Slack mrkdwn: **bold**, *italic*, # headings, - bullets, [links](url)."""
    out = escape(text)
    out = re.sub(r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)", r"<\2|\1>", out)
    out = re.sub(r"(?<!\*)\*(?!\*|\s)([^*\n]+?)(?<!\s)\*(?!\*)", "\x00\\1\x00", out)  # *italic* → _italic_
    out = re.sub(r"\*\*(?!\s)(.+?)(?<!\s)\*\*", r"*\1*", out)
    out = re.sub(r"__(?!\s)(.+?)(?<!\s)__", r"*\1*", out)
    out = re.sub(r"~~(.+?)~~", r"~\1~", out)
    out = re.sub(r"^#{1,6}\s+(.+)$", r"*\1*", out, flags=re.M)
    out = re.sub(r"^(\s*)[-*+]\s+", r"\1• ", out, flags=re.M)
    return out.replace("\x00", "_")


def split_text(text: str, limit: int = SECTION_CHARS) -> list[str]:
    """Pieces of at most `limit` characters, cut at paragraphs, then lines, then words."""
    text = text.strip()
    if len(text) <= limit:
        return [text] if text else []
    for sep in ("\n\n", "\n", " "):
        cut = text.rfind(sep, 0, limit + 1)
        if cut > limit // 3:
            return [text[:cut].rstrip(), *split_text(text[cut + len(sep):], limit)]
    return [text[:limit], *split_text(text[limit:], limit)]


def button_label(label: str) -> str:
    label = " ".join(label.split()) or "…"
    return label if len(label) <= BUTTON_CHARS else label[: BUTTON_CHARS - 1].rstrip() + "…"


def _section(text: str) -> SectionBlock:
    return SectionBlock(text=MarkdownTextObject(text=text))


def _context(*texts: str) -> ContextBlock:
    return ContextBlock(elements=[MarkdownTextObject(text=t[:2900]) for t in texts if t][:10])


def actions_blocks(actions: list[Action], block_prefix: str = "actions") -> list[Block]:
    buttons = []
    for a in actions:
        button = ButtonElement(text=PlainTextObject(text=button_label(a.label), emoji=True), action_id=a.id[:255],
                               value=a.value[:2000] or a.id, style=a.style or None)
        buttons.append(button)
    return [ActionsBlock(block_id=f"{block_prefix}:{i // 25}", elements=buttons[i:i + 25])
            for i in range(0, len(buttons), 25)]


# posts ------------------------------------------------------------------------------------------
def roster_lines(personas: list[Persona]) -> str:
    return "\n".join(
        f"{p.icon} *{escape(p.name)}* — {escape(p.title) or ROLE_LABELS[p.role]} _({ROLE_LABELS[p.role]})_"
        for p in personas
    )


def identity(persona: Persona | None) -> dict[str, str | None]:
    if persona is None:
        return {}
    icon = persona.icon.strip()
    if icon.startswith("http"):
        return {"username": persona.name[:80], "icon_url": icon}
    return {"username": persona.name[:80], "icon_emoji": icon if icon.startswith(":") else ":speech_balloon:"}


def _pack(head: list[Block], body: list[str], tail: list[Block], post: Post) -> list[Message]:
    """Spread body sections over as many messages as the limits need; head goes first, tail last."""
    chunks = [piece for para in body for piece in split_text(para)]
    groups: list[list[str]] = [[]]
    size = 0
    for chunk in chunks:
        if groups[-1] and (size + len(chunk) > MESSAGE_CHARS or len(groups[-1]) >= MAX_BLOCKS - 8):
            groups.append([])
            size = 0
        groups[-1].append(chunk)
        size += len(chunk)
    who = identity(post.persona)
    messages = []
    for i, group in enumerate(groups):
        blocks: list[Block] = list(head) if i == 0 else [_context(f"_(continued, part {i + 1} of {len(groups)})_")]
        blocks += [_section(chunk) for chunk in group]
        if i == len(groups) - 1:
            blocks += tail
        if post.offline:
            blocks.append(_context(OFFLINE_LABEL))
        fallback = " ".join(" ".join(group).split())[:2900] or post.title or post.kind
        if post.offline and i == 0:
            fallback = "[offline model] " + fallback
        meta = {"event_type": EVENT_TYPE, "event_payload": {"key": post.replaces or post.key, "part": i}}
        messages.append(Message(text=fallback, blocks=[b.to_dict() for b in blocks[:MAX_BLOCKS]],
                                metadata=meta, **who))  # type: ignore[arg-type]
    return messages


def render(post: Post, topic: str = "") -> list[Message]:
    """A post as one or more Slack messages (more only when a long text must be split)."""
    if post.kind == "header":
        return _header(post)
    head: list[Block] = []
    if post.persona is not None and post.title:
        head.append(_context(f"*{escape(post.title)}*"))
    elif post.title:
        head.append(_section(f"*{escape(post.title)}*"))
    body = [mrkdwn(post.text)] if post.text else []
    if post.roster:
        body.append(roster_lines(post.roster))
    return _pack(head, body, actions_blocks(post.actions), post)


def _header(post: Post) -> list[Message]:
    title = f"Council: {post.title}"
    head: list[Block] = [HeaderBlock(text=PlainTextObject(text=title if len(title) <= 150 else title[:149] + "…"))]
    body = []
    if len(title) > 150:
        body.append(f"*Topic:* {escape(post.title)}")
    paragraphs = post.text.split("\n\n")
    if post.roster:
        body.append("*Participants*\n" + roster_lines(post.roster))
        paragraphs = paragraphs[1:]
    body += [mrkdwn(p) for p in paragraphs if p.strip()]
    tail = [*actions_blocks(post.actions, "controls"),
            _context("Reply in the thread to join in; the council hears you on its next turn.")]
    messages = _pack(head, body, tail, post)
    for m in messages:
        m.text = f"Council: {post.title[:200]}"
    return messages


def thinking(persona: Persona, key: str) -> Message:
    """A placeholder that the turn's post later replaces in place (metadata finds it after a crash)."""
    return Message(
        text=f"{persona.name} is thinking…",
        blocks=[_context(f"{persona.icon} _{escape(persona.name)} is thinking…_").to_dict()],
        metadata={"event_type": THINKING_EVENT, "event_payload": {"key": key}},
        **identity(persona),  # type: ignore[arg-type]
    )


def note(text: str) -> Message:
    """What a placeholder becomes when its turn brings no post of its own (a failure, the roster)."""
    return Message(text=text, blocks=[_context(f"_{escape(text)}_").to_dict()])


def settled(blocks: list[dict[str, Any]], note: str) -> list[dict[str, Any]]:
    """A clicked choice message: its buttons removed, with who chose what in their place."""
    kept = [b for b in blocks if b.get("type") != "actions"]
    return [*kept, _context(note).to_dict()]
