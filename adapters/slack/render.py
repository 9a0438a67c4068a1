"""Block Kit for the core's posts (slack_sdk.models.blocks): mrkdwn, size limits, long turns split."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ConfirmObject,
    ContextBlock,
    HeaderBlock,
    MarkdownTextObject,
    Option,
    OverflowMenuElement,
    PlainTextObject,
    SectionBlock,
    StaticSelectElement,
)

from adapters.slack.markup import SECTION_CHARS, escape, flat, mrkdwn, split_text, user_mentions
from core.deliberation import links
from core.models import Action, Persona, Post, Role

EVENT_TYPE = "council_post"
THINKING_EVENT = "council_thinking"
MESSAGE_CHARS = 9000  # stay well under ~11k characters of block text per message
MAX_BLOCKS = 50
BUTTON_CHARS = 75
SELECT_OPTIONS = 100  # a static_select's most options
OFFLINE_LABEL = "⚠️ _Offline model: these words were not written by an AI. Set ANTHROPIC_API_KEY for real answers._"
ROLE_LABELS = {Role.MODERATOR: "moderator", Role.HISTORIAN: "historian", Role.CONTRARIAN: "contrarian",
               Role.CROSS_DOMAIN: "cross-domain thinker", Role.EXPERT: "expert", Role.ADVISOR: "advisor",
               Role.REFEREE: "referee", Role.OWNER: "domain owner"}


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
def button_label(label: str) -> str:
    label = " ".join(label.split()) or "…"
    return label if len(label) <= BUTTON_CHARS else label[: BUTTON_CHARS - 1].rstrip() + "…"


def section(text: str) -> SectionBlock:
    return SectionBlock(text=MarkdownTextObject(text=text))


def context(*texts: str) -> ContextBlock:
    return ContextBlock(elements=[MarkdownTextObject(text=t[:2900]) for t in texts if t][:10])


def confirm_of(a: Action) -> ConfirmObject | None:
    return ConfirmObject(title=f"{a.label}?", text=a.confirm, confirm=a.label, deny="Cancel",
                         style="danger" if a.style == "danger" else None) if a.confirm else None


def actions_blocks(actions: list[Action], block_prefix: str = "actions") -> list[Block]:
    """Buttons, except that the choices of one pick (`pick:*`, a place in a ranking) become one select menu, and a
    lesser action (`menu`) sits in an overflow menu (the "⋯" after the buttons), its value the option's."""
    buttons: list[ButtonElement | StaticSelectElement | OverflowMenuElement] = []
    picks = [a for a in actions if a.id.startswith("pick:")]
    for start in range(0, len(picks), SELECT_OPTIONS):  # a long list over several menus, each naming its range
        page = picks[start:start + SELECT_OPTIONS]
        label = "Choose…" if len(picks) <= SELECT_OPTIONS else f"Choose ({start + 1}–{start + len(page)})…"
        buttons.append(StaticSelectElement(
            action_id="pick" if not start else f"pick:{start // SELECT_OPTIONS + 1}",
            placeholder=PlainTextObject(text=label),
            options=[Option(text=PlainTextObject(text=button_label(a.label)[:75]), value=a.value[:150])
                     for a in page]))
    places: dict[str, list[Action]] = {}  # a seated person's ranking: `seat:rank:<place>:<n>`, a menu per place
    for a in actions:
        if a.id.startswith("seat:rank:"):
            places.setdefault(a.id.rsplit(":", 1)[0], []).append(a)
    buttons += [StaticSelectElement(action_id=menu, placeholder=PlainTextObject(text=f"#{menu.rsplit(':', 1)[1]}…"),
                                    options=[Option(text=PlainTextObject(text=button_label(a.label)[:75]),
                                                    value=a.value[:150]) for a in page[:SELECT_OPTIONS]])
                for menu, page in places.items()]
    for a in actions:
        if a.id.startswith(("pick:", "seat:rank:")) or a.menu:
            continue
        button = ButtonElement(text=PlainTextObject(text=button_label(a.label), emoji=True), action_id=a.id[:255],
                               value=a.value[:2000] or a.id, style=a.style or None, confirm=confirm_of(a))
        buttons.append(button)
    buttons += [OverflowMenuElement(action_id=a.id[:255], confirm=confirm_of(a), options=[
        Option(text=PlainTextObject(text=button_label(a.label)), value=a.value[:150] or a.id)])
        for a in actions if a.menu and not a.id.startswith("pick:")]
    return [ActionsBlock(block_id=f"{block_prefix}:{i // 25}", elements=buttons[i:i + 25])
            for i in range(0, len(buttons), 25)]


# posts ------------------------------------------------------------------------------------------
def roster_lines(personas: list[Persona]) -> str:
    return "\n".join(
        f"{p.icon} *{escape(p.name)}* — {escape(p.title) or ROLE_LABELS[p.role]} _({ROLE_LABELS[p.role]})_"
        + (f" · `{escape(p.model)}`" if p.model else "") for p in personas
    )


def identity(persona: Persona | None) -> dict[str, str | None]:
    if persona is None:
        return {}
    icon = persona.icon.strip()
    if icon.startswith("http"):
        return {"username": persona.name[:80], "icon_url": icon}
    return {"username": persona.name[:80], "icon_emoji": icon if icon.startswith(":") else ":speech_balloon:"}


def pack(head: list[Block], body: list[str], tail: list[Block], post: Post, *, lead: str = "",
         offset: int = 0) -> list[Message]:
    """Spread body sections over as many messages as the limits need; head goes first, tail last.
    `lead` (mentions) opens the first section and the notification text; parts are numbered from `offset`
    (the replies under an announcement posted apart are parts 1…n)."""
    if lead:
        body = [f"{lead} {body[0]}" if body else lead, *body[1:]]
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
    total = len(groups) + offset
    for i, group in enumerate(groups):
        part = offset + i
        blocks: list[Block] = list(head) if part == 0 else [context(f"_(continued, part {part + 1} of {total})_")]
        blocks += [section(chunk) for chunk in group]
        if i == len(groups) - 1:
            blocks += tail
        if post.offline:
            blocks.append(context(OFFLINE_LABEL))
        fallback = notification(group, post, lead, first=part == 0)
        meta = {"event_type": EVENT_TYPE, "event_payload": {"key": post.replaces or post.key, "part": part}}
        messages.append(Message(text=fallback, blocks=[b.to_dict() for b in blocks[:MAX_BLOCKS]],
                                metadata=meta, **who))  # type: ignore[arg-type]
    return messages


def notification(texts: list[str], post: Post, lead: str = "", *, first: bool = True) -> str:
    """A message's `text` (notifications, screen readers): the mentions first, then the offline mark."""
    text = flat(texts, SECTION_CHARS) or escape(post.title or post.kind)  # the texts are mrkdwn, escaped
    if not (post.offline and first):
        return text
    return f"{lead} [offline model] {text.removeprefix(lead).lstrip()}" if lead else f"[offline model] {text}"


def opens_with_title(post: Post) -> bool:
    """Whether the text already starts with the title (a digest's bold first line): not shown twice."""
    return bool(post.title) and post.text.lstrip("*_# ").startswith(post.title)


def render(post: Post, topic: str = "") -> list[Message]:
    """A post as one or more Slack messages (more only when a long text must be split); the people it
    mentions open its first section and its notification text."""
    if post.kind == "header":
        return _header(post)
    head: list[Block] = []
    body: list[str] = []
    if post.persona is not None and post.title:
        head.append(context(f"*{escape(post.title)}*"))
    elif post.title and not opens_with_title(post):
        body.append(f"*{escape(post.title)}*")
    if post.text:
        body.append(mrkdwn(post.text))
    if post.roster:
        body.append(roster_lines(post.roster))
    return pack(head, body, [*actions_blocks(post.actions), *page_link(post)], post,
                lead=user_mentions(post.mentions))


def page_link(post: Post) -> list[Block]:
    """A link to the discussion's page, when the post carries one (the header, the final synthesis)."""
    if not post.page_url:
        return []
    return [context(f"📄 <{escape(post.page_url)}|Read the whole discussion on its page>")]


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
    if post.state:
        body.append(mrkdwn(post.state))
    controls = [*post.actions, Action(id="ctl:export", label="Export", value=post.key.split(":")[0])]
    tail = [*actions_blocks(controls, "controls"),
            context("Reply in the thread to join in; the council hears you on its next turn."), *page_link(post)]
    lead = user_mentions(post.mentions)
    messages = pack(head, body, tail, post, lead=lead)
    for i, m in enumerate(messages):
        m.text = f"{lead if i == 0 else ''} Council: {escape(post.title[:200])}".lstrip()
    return messages


def thinking(persona: Persona, key: str) -> Message:
    """A placeholder that the turn's post later replaces in place (metadata finds it after a crash)."""
    return Message(
        text=f"{escape(persona.name)} is thinking…",
        blocks=[context(f"{persona.icon} _{escape(persona.name)} is thinking…_").to_dict()],
        metadata={"event_type": THINKING_EVENT, "event_payload": {"key": key}},
        **identity(persona),  # type: ignore[arg-type]
    )


def live(persona: Persona, key: str, text: str) -> Message:
    """A placeholder grown with the words written so far; still a placeholder (metadata) until the post lands.
    The words pass the finished post's link rule first: a link the post will show as text is never live meanwhile."""
    shown = mrkdwn(links.plain(text))
    if len(shown) > SECTION_CHARS - 2:
        shown = shown[: SECTION_CHARS - 2].rsplit(" ", 1)[0] + " …"
    return Message(
        text=f"{escape(persona.name)} is writing…",
        blocks=[section(shown).to_dict(), context(f"{persona.icon} _{escape(persona.name)} is writing…_").to_dict()],
        metadata={"event_type": THINKING_EVENT, "event_payload": {"key": key}},
    )


def note(text: str) -> Message:
    """What a placeholder becomes when its turn brings no post of its own (a failure, the roster)."""
    return Message(text=escape(text), blocks=[context(f"_{escape(text)}_").to_dict()])


def settled(blocks: list[dict[str, Any]], note: str) -> list[dict[str, Any]]:
    """A clicked choice message: its buttons removed, with who chose what in their place."""
    kept = [b for b in blocks if b.get("type") != "actions"]
    return [*kept, context(note).to_dict()]
