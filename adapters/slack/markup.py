"""Slack mrkdwn from the core's light Markdown: escaping, links, emphasis, user mentions, splitting (pure)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from core.showing.moments import MARKER, Moment, expand

SECTION_CHARS = 2900  # Slack's section text limit is 3,000

# [text](url), the URL allowed one level of balanced parentheses (…/wiki/Foo_(bar)).
MD_LINK = re.compile(r"\[([^\[\]\n]+)\]\((https?://(?:[^()\s]|\([^()\s]*\))+)\)")
_HELD = re.compile("\x01(\\d+)\x01")
# Slack user ids: U… (or W… on Enterprise Grid), upper-case letters and digits.
_USER_ID = re.compile(r"[UW][A-Z0-9]{2,20}")
NOT_PEOPLE = {"USLACKBOT"}


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def link(url: str, label: str) -> str:
    """A Slack link; `url` and `label` already escaped. `|` would end the URL and `>` the link."""
    return f"<{url}|{label.replace('|', '¦')}>" if label else f"<{url}>"


def date_token(moment: Moment) -> str:
    """Slack's date token: each reader sees the time in their own zone; clients that can't show it print the
    fallback, the time in the zone it was set in."""
    fallback = moment.fallback().replace("|", "¦")
    return f"<!date^{moment.epoch}^{{date_short_pretty}} {{time}}|{fallback}>"


def times(text: str) -> str:
    """The core's time markers as Slack date tokens (for text that is already mrkdwn)."""
    return expand(text, date_token)


# Each rule runs only where its mark occurs: a turn seldom has emphasis or headings, and every rule scans the text.
_ITALIC = re.compile(r"(?<!\*)\*(?!\*|\s)([^*\n]+?)(?<!\s)\*(?!\*)")
_BOLD = re.compile(r"\*\*(?!\s)(.+?)(?<!\s)\*\*")
_UNDERLINED = re.compile(r"__(?!\s)(.+?)(?<!\s)__")
_STRUCK = re.compile(r"~~(.+?)~~")
_HEADING = re.compile(r"^#{1,6}\s+(.+)$", re.M)
_BULLET = re.compile(r"^(\s*)[-*+]\s+", re.M)


def _bulleted(text: str) -> bool:
    """Whether a line starts (after its blanks) with a bullet mark."""
    return any(line.lstrip()[:1] in ("-", "*", "+") for line in text.split("\n"))


def mrkdwn(text: str) -> str:
    """The core's light Markdown to Slack mrkdwn: **bold**, *italic*, # headings, - bullets, [links](url)."""
    held: list[str] = []

    def hold(m: re.Match[str]) -> str:  # links are kept away from the emphasis rules (URLs hold _ and *)
        held.append(link(m.group(2), m.group(1).strip()))
        return f"\x01{len(held) - 1}\x01"

    def hold_time(m: re.Match[str]) -> str:  # a fallback zone such as America/New_York has underscores
        held.append(times(m.group(0)))
        return f"\x01{len(held) - 1}\x01"

    out = escape(text.replace("\x00", "").replace("\x01", ""))
    if "](" in out:
        out = MD_LINK.sub(hold, out)
    if "⟦" in out:
        out = MARKER.sub(hold_time, out)
    if "*" in out:
        out = _ITALIC.sub("\x00\\1\x00", out)  # *italic* → _italic_
        out = _BOLD.sub(r"*\1*", out)
    if "__" in out:
        out = _UNDERLINED.sub(r"*\1*", out)
    if "~~" in out:
        out = _STRUCK.sub(r"~\1~", out)
    if "#" in out:
        out = _HEADING.sub(r"*\1*", out)
    if _bulleted(out):
        out = _BULLET.sub(r"\1• ", out)
    if held:
        out = _HELD.sub(lambda m: held[int(m.group(1))], out)
    return out.replace("\x00", "_")


def user_mentions(ids: Iterable[str]) -> str:
    """`<@U1> <@U2>` for the ids that look like Slack user ids, each once, in order; others are dropped."""
    people = dict.fromkeys(i.strip() for i in ids if _USER_ID.fullmatch(i.strip()) and i.strip() not in NOT_PEOPLE)
    return " ".join(f"<@{i}>" for i in people)


def _outside_link(text: str, cut: int) -> int:
    """Move a cut back so it never falls inside a `<…>` link or mention."""
    opened = text.rfind("<", 0, cut)
    return opened if opened > text.rfind(">", 0, cut) else cut


def split_text(text: str, limit: int = SECTION_CHARS) -> list[str]:
    """Pieces of at most `limit` characters, cut at paragraphs, then lines, then words (never inside a link)."""
    text = text.strip()
    if len(text) <= limit:
        return [text] if text else []
    for sep in ("\n\n", "\n", " "):
        cut = text.rfind(sep, 0, limit + 1)
        if sep == " " and cut > 0:
            cut = text.rfind(" ", 0, _outside_link(text, cut) + 1)
        if cut > limit // 3:
            return [text[:cut].rstrip(), *split_text(text[cut + len(sep):], limit)]
    cut = _outside_link(text, limit)
    cut = cut if cut > limit // 3 else limit
    return [text[:cut], *split_text(text[cut:], limit)]


def flat(texts: Iterable[str], limit: int) -> str:
    """Texts on one line (a message's notification text), cut at a word, never inside a link."""
    line = " ".join(" ".join(texts).split())
    if len(line) <= limit:
        return line
    cut = line.rfind(" ", 0, _outside_link(line, limit) + 1)
    return line[:cut if cut > limit // 2 else limit].rstrip() + "…"
