"""Text laid out in Discord embeds within every documented limit: what does not fit goes on, never cut off."""

from __future__ import annotations

from dataclasses import dataclass, field

TITLE_MAX = 256
AUTHOR_MAX = 256
DESCRIPTION_MAX = 4096
FIELD_NAME_MAX = 256
FIELD_VALUE_MAX = 1024
FIELDS_MAX = 25
FOOTER_MAX = 2048
TOTAL_MAX = 6000  # title, description, field names and values, footer and author of a message's embeds together
CONTINUED = "\u200b"  # a field continuing the description: a name Discord requires, that shows as nothing


@dataclass
class Layout:
    """One embed's text: the description, then fields continuing it."""

    description: str
    fields: list[str] = field(default_factory=list)

    def size(self) -> int:
        return len(self.description) + sum(len(CONTINUED) + len(f) for f in self.fields)


def split(text: str, limit: int) -> list[str]:
    """Pieces of at most `limit` characters, cut at a paragraph, a line or a word when there is one."""
    pieces: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        window = rest[:limit]
        cut = max(window.rfind("\n\n"), 0)
        if cut < limit // 2:
            cut = window.rfind("\n")
        if cut < limit // 2:
            cut = window.rfind(" ")
        if cut <= 0:
            cut = limit
        pieces.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if rest or not pieces:
        pieces.append(rest)
    return pieces


def layouts(text: str, *, taken: int = 0) -> list[Layout]:
    """The text over as many embeds (one a message) as it needs: each a description of up to 4,096 characters, then
    fields of up to 1,024, while the message stays within 6,000 in all (`taken`: what its title, author and footer
    use already, in the first message)."""
    out: list[Layout] = []
    rest = text.strip()
    while rest or not out:
        room = TOTAL_MAX - (taken if not out else 0)
        head = split(rest, min(DESCRIPTION_MAX, room))[0]
        layout = Layout(head)
        rest = rest[len(head):].lstrip()
        while rest and len(layout.fields) < FIELDS_MAX:
            room_left = room - layout.size() - len(CONTINUED)
            if room_left < 100:  # too little for a readable piece: the next message takes it
                break
            piece = split(rest, min(FIELD_VALUE_MAX, room_left))[0]
            layout.fields.append(piece)
            rest = rest[len(piece):].lstrip()
        out.append(layout)
    return out
