"""Posts as Discord messages: content split at 2,000 characters, embeds, button views, persona identities."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import discord

from adapters.discord import embeds
from adapters.discord.embeds import AUTHOR_MAX, CONTINUED, FOOTER_MAX, TITLE_MAX, layouts
from adapters.discord.views import view, views
from core.deliberation import links
from core.models import Persona, Post, Role
from core.showing.moments import Moment, expand

CONTENT_MAX = 2000
THREAD_NAME_MAX = 100
NAME_MAX = 80
URL_MAX = 512  # a link button's URL
OFFLINE = "-# ⚠️ offline model: set ANTHROPIC_API_KEY for real answers"
AVATAR_BASE = "https://cdn.jsdelivr.net/gh/jdecked/twemoji@15.1.0/assets/72x72/"
NO_MENTIONS: dict[str, Any] = {"parse": []}  # persona text and topics never ping anyone
COLOURS = {Role.MODERATOR: 0x5865F2, Role.HISTORIAN: 0xFEE75C, Role.CONTRARIAN: 0xED4245,
           Role.CROSS_DOMAIN: 0xEB459E, Role.EXPERT: 0x57F287, Role.ADVISOR: 0x57F287, Role.REFEREE: 0xFEE75C,
           Role.OWNER: 0x57F287}
# The core names icons by shortcode; Discord renders shortcodes only when a person types them.
EMOJI = {
    "classical_building": "🏛️", "scroll": "📜", "smiling_imp": "😈", "twisted_rightwards_arrows": "🔀",
    "bulb": "💡", "gear": "⚙️", "bar_chart": "📊", "shield": "🛡️", "seedling": "🌱", "compass": "🧭",
    "microscope": "🔬", "hammer": "🔨", "speech_balloon": "💬", "warning": "⚠️", "white_check_mark": "✅",
    "ballot_box": "🗳️", "robot_face": "🤖", "brain": "🧠", "books": "📚", "rocket": "🚀", "mag": "🔍",
}
SHORTCODE = re.compile(r":([a-z0-9_+-]+):")


@dataclass
class Message:
    """One Discord message: its JSON body is `payload()`; `view` holds the live button objects."""

    content: str = ""
    embeds: list[discord.Embed] = field(default_factory=list)
    view: discord.ui.View | None = None
    mentions: list[str] = field(default_factory=list)  # user ids this message may ping

    def payload(self, *, editing: bool = False) -> dict[str, Any]:
        allowed = {"parse": [], "users": self.mentions[:100]} if self.mentions else NO_MENTIONS
        body: dict[str, Any] = {"content": self.content, "embeds": [e.to_dict() for e in self.embeds],
                                "allowed_mentions": allowed}
        if self.view is not None or editing:
            body["components"] = self.view.to_components() if self.view is not None else []
        return body

    def signature(self) -> tuple[str, str]:
        """What identifies this message among the channel's recent ones after a crash."""
        embed = self.embeds[0].to_dict() if self.embeds else {}
        return self.content, str(embed.get("title") or "") + str(embed.get("description") or "")


def timestamp(moment: Moment) -> str:
    """Discord's timestamp markup: every reader sees the full date and time in their own zone, and how far
    away it is when that helps."""
    full = f"<t:{moment.epoch}:F>"
    return f"{full} (<t:{moment.epoch}:R>)" if moment.relative else full


def times(text: str) -> str:
    """The core's time markers as Discord timestamps."""
    return expand(text, timestamp)


def emojize(text: str) -> str:
    """Shortcodes as emoji, and the core's time markers as Discord timestamps: what every post's text needs."""
    return times(SHORTCODE.sub(lambda m: EMOJI.get(m[1], m[0]), text))


def icon(persona: Persona) -> str:
    return emojize(persona.icon) if persona.icon else "💬"


def avatar_url(persona: Persona) -> str:
    """A Twemoji image of the persona's icon: webhooks take an image URL, not an emoji."""
    glyph = icon(persona)
    points = [f"{ord(ch):x}" for ch in glyph if ch != "\ufe0f"]
    return AVATAR_BASE + "-".join(points or ["1f4ac"]) + ".png"


def sanitize_name(name: str) -> str:
    """A webhook username Discord accepts: 1-80 characters, no "discord"/"clyde", not "here"/"everyone"."""
    cleaned = re.sub(r"[@#:]|```", "", " ".join(name.split()))
    cleaned = re.sub(r"(disc)o(rd)", r"\g<1>0\g<2>", cleaned, flags=re.I)  # readable, and accepted
    cleaned = re.sub(r"(c)l(yde)", r"\g<1>1\g<2>", cleaned, flags=re.I)
    if cleaned.lower() in ("here", "everyone"):
        cleaned = f"{cleaned} (persona)"
    return cleaned[:NAME_MAX].strip() or "Council"


def thread_name(topic: str) -> str:
    name = " ".join(topic.split())
    return (name[: THREAD_NAME_MAX - 1] + "…") if len(name) > THREAD_NAME_MAX else (name or "Council")


def split(text: str, limit: int = CONTENT_MAX) -> list[str]:
    """Chunks of at most `limit` characters (a message's content by default), cut as the embeds' text is."""
    return embeds.split(text, limit)


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def roster_lines(personas: list[Persona]) -> str:
    return "\n".join(f"{icon(p)} **{p.name}** — {p.title}" + (f" · `{p.model}`" if p.model else "") for p in personas)


def header(post: Post, *, reply_to: str = "") -> list[Message]:
    """The header: one embed, its text in the description and fields after it; only a text past Discord's 6,000
    characters an embed goes on in more messages (in the thread, after the first). A topic too long for the title
    is shown whole at the top of the text."""
    text = f"{post.text}\n\n{post.state}" if post.state else post.text
    title = f"🏛️ Council: {post.title}"
    if len(title) > TITLE_MAX:
        text = f"**Topic:** {post.title}\n\n{text}"
        title = _shorten(title, TITLE_MAX)
    footer = OFFLINE.removeprefix("-# ") if post.offline else ""
    messages = []
    for i, layout in enumerate(layouts(emojize(text), taken=len(title) + len(footer))):
        embed = discord.Embed(title=title if i == 0 else None, description=layout.description or None,
                              colour=0x5865F2)
        for value in layout.fields:
            embed.add_field(name=CONTINUED, value=value, inline=False)
        if footer:
            embed.set_footer(text=footer)
        messages.append(Message(embeds=[embed]))
    messages[0].view = view(post.actions, reply_to=reply_to)
    return messages


def persona_chunks(post: Post) -> list[str]:
    """A persona's turn as content chunks: a small heading line, the text, the offline label last."""
    body = (f"-# {post.title}\n" if post.title else "") + emojize(post.text)
    return split(body + (f"\n{OFFLINE}" if post.offline else ""))


def persona_embeds(post: Post) -> list[Message]:
    """Without a webhook: the bot speaks, and an embed names the persona as its author. A persona's title that would
    not fit the author line (256) and a post title that would not fit the footer (2,048) open the text instead."""
    assert post.persona is not None
    p = post.persona
    author, lead = sanitize_name(p.name), ""
    if p.title and len(author) + 3 + len(p.title) <= AUTHOR_MAX:
        author += f" · {p.title}"
    elif p.title:
        lead += f"*{p.title}*\n"
    footer = " · ".join(x for x in (post.title, OFFLINE.removeprefix("-# ") if post.offline else "") if x)
    if len(footer) > FOOTER_MAX:
        lead += f"**{post.title}**\n"
        footer = OFFLINE.removeprefix("-# ") if post.offline else ""
    messages = []
    for chunk in split(lead + emojize(post.text)):
        embed = discord.Embed(description=chunk or "…", colour=COLOURS.get(p.role, 0x99AAB5))
        embed.set_author(name=author, icon_url=avatar_url(p))
        if footer:
            embed.set_footer(text=footer)
        messages.append(Message(embeds=[embed]))
    return messages


def plain(post: Post, *, reply_to: str = "") -> list[Message]:
    """Notices, choices, polls and errors: bot messages, buttons under the last chunk."""
    parts = [f"**{post.title}**" if post.title else "", emojize(post.text)]
    if post.roster:
        parts.append(roster_lines(post.roster))
    if post.offline:
        parts.append(OFFLINE)
    chunks = split("\n".join(x for x in parts if x))
    messages = [Message(content=chunk) for chunk in chunks]
    wants_reply = reply_to if post.kind == "choice" else ""
    first, *more = views(post.actions, reply_to=wants_reply)
    messages[-1].view = first
    for extra in more:  # the menus of a long choice that did not fit under the text: in messages of their own
        messages.append(Message(content="-# More choices:", view=extra))
    return messages


def render(post: Post, *, webhook: bool, reply_to: str = "") -> list[Message]:
    """The messages for a post; a persona's post is content for its webhook identity, or embeds without one."""
    if post.kind == "header":
        messages = header(post, reply_to=reply_to)
    elif post.persona is not None:
        messages = [Message(content=c) for c in persona_chunks(post)] if webhook else persona_embeds(post)
        # A persona post's own actions (Check claims, where it makes a claim): small grey buttons under its last
        # part (the app's own webhook may carry components).
        messages[-1].view = view(post.actions) if post.actions else None
    else:
        messages = plain(post, reply_to=reply_to)
    if post.page_url and len(post.page_url) <= URL_MAX:  # a link button: it never changes what find() compares
        first = messages[0]
        first.view = first.view or discord.ui.View(timeout=None)
        first.view.add_item(discord.ui.Button(style=discord.ButtonStyle.link, url=post.page_url,
                                              label="Discussion page", emoji="📄"))
    if post.mentions:
        people = [m for m in post.mentions if m.isdigit()]
        first = messages[0]
        pings = " ".join(f"<@{m}>" for m in people)
        if pings and len(pings) + len(first.content) < CONTENT_MAX:
            first.content, first.mentions = f"{pings} {first.content}".strip(), people
    return messages


def live(text: str) -> Message:
    """A persona's words so far (the first message's worth), marked as still being written. The words pass the
    finished post's link rule first: a masked link the post will show as text is never live meanwhile."""
    mark = "\n-# ✍️ writing…"
    body = emojize(links.plain(text)).strip()
    if len(body) > CONTENT_MAX - len(mark) - 1:
        body = body[: CONTENT_MAX - len(mark) - 2].rsplit(" ", 1)[0] + " …"
    return Message(content=body + mark)


def identity(persona: Persona) -> dict[str, str]:
    return {"username": sanitize_name(persona.name), "avatar_url": avatar_url(persona)}
