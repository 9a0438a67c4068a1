"""Rich renderables for posts: one coloured panel per persona, notices and polls as plain lines."""

from __future__ import annotations

import re

from rich.console import Group, RenderableType
from rich.emoji import Emoji
from rich.markdown import Markdown
from rich.panel import Panel
from rich.text import Text

from adapters.console.translate import choices
from core.models import Post, Role
from core.showing.moments import plain

COLOURS = {
    Role.MODERATOR: "bright_blue",
    Role.HISTORIAN: "yellow",
    Role.CONTRARIAN: "red",
    Role.CROSS_DOMAIN: "magenta",
    Role.EXPERT: "green",
    Role.ADVISOR: "green",
    Role.REFEREE: "yellow",
    Role.OWNER: "green",
}
OFFLINE = "offline model: set ANTHROPIC_API_KEY for real answers"
FENCE = re.compile(r"^(```|~~~)")


def markdown(text: str, style: str = "none") -> Markdown:
    """Chat Markdown for the terminal: a line break in a post is a line break, as in the chats it is written for
    (CommonMark would run "**Recommendation**" and the next line into one paragraph); code blocks stay as typed."""
    lines, fenced = [], False
    for line in text.split("\n"):
        if FENCE.match(line.strip()):
            fenced = not fenced
        lines.append(line if fenced or not line.strip() else line + "  ")
    return Markdown("\n".join(lines).rstrip(), style=style)


def render(post: Post, *, voting: bool = True) -> RenderableType:
    """`voting=False` shows a poll as the council's positions, with no vote to offer (nobody is left to vote)."""
    subtitle = f"[dim]{OFFLINE}[/]" if post.offline else None
    post = post.model_copy(update={"text": plain(post.text)})  # times named with their zone: one reader, one clock
    if post.kind == "header" and not post.roster:  # the panel is drawn once, when the council is seated
        return Text.assemble(("Council: ", "bold"), (post.title or "", "bold"), " · assembling the council…",
                             style="dim")
    if post.kind == "header":
        # The roster's icons are shortcodes (":bulb:"), one persona a line: keep the lines as lines.
        body = markdown(Emoji.replace(post.text))
        return Panel(body, title=Text(f"Council: {post.title}", style="bold"), border_style="bold white",
                     subtitle=subtitle)
    if post.persona is not None:
        p = post.persona
        colour = COLOURS.get(p.role, "white")
        # Names and titles are the model's (or a person's) text: "[core]" in one is words, not rich markup.
        title = Text.assemble(f"{Emoji.replace(p.icon)} ", (p.name, f"bold {colour}"), (f" — {p.title} · {post.title}",
                                                                                        "dim"))
        return Panel(markdown(post.text), title=title, title_align="left", border_style=colour, subtitle=subtitle)
    if post.kind == "choice" and post.actions:
        numbered = Text("\n".join(f"  [{i}] {a.label}" for i, a in enumerate(choices(post.actions), 1)))
        parts = [x for x in (Text(post.title, style="bold") if post.title else None, markdown(post.text), numbered)
                 if x is not None]
        return Panel(Group(*parts), border_style="cyan", subtitle=subtitle)
    if post.kind == "poll" and post.poll is not None:
        how = ("closed" if post.poll.closed else f"vote: /vote {post.poll.poll_id} <number>" if voting
               else "the council's positions")
        return Panel(markdown(post.text), border_style="cyan", title=f"poll {post.poll.poll_id} · {how}",
                     title_align="left", subtitle=subtitle)
    first = [a for a in post.actions if a.id.startswith("seat:rank:1:")]  # a seat's ranking: its options, numbered
    if first:
        lines = "\n".join(f"  [{i}] {a.label}" for i, a in enumerate(first, 1))
        return Group(markdown(post.text), Text(lines), Text("  Type their numbers, best first (e.g. 2 1 3).",
                                                               style="bold"))
    style = "bold red" if post.kind == "error" else "dim"
    return markdown(post.text + (f"\n\n_({OFFLINE})_" if post.offline else ""), style=style)
