"""People's words as data (pure): every person-supplied string reaches a prompt only through here.

Text is escaped so it can never close or forge the prompt's own framing: `&`, `<` and `>` become entities
(after the chat adapter has turned its wire format back into what the person typed, so a typed `&lt;` arrives
here as four characters and leaves as `&amp;lt;`, never as a tag). Invisible format characters (zero-width,
bidirectional overrides, Unicode "tag" characters that smuggle hidden ASCII) are removed, and attribute values
and inline values are kept to one line, so a name or topic cannot start a new line that looks like framing.
"""

from __future__ import annotations

import unicodedata

ZWJ = "\u200d"  # joins emoji sequences (👩‍💻): harmless, and removing it would change what people wrote
KEEP_CONTROLS = {"\n", "\t"}
NAME_CHARS = 80
INLINE_CHARS = 300


# ASCII has no format characters, only controls: most text is cleaned by one C-level pass.
_ASCII_CONTROLS = {i: None for i in [*range(0x20), 0x7F] if chr(i) not in KEEP_CONTROLS}


def clean(text: str) -> str:
    """Drop invisible format and control characters (bidi overrides, zero-width, tag characters, NUL)."""
    if text.isascii():
        return text.translate(_ASCII_CONTROLS)
    out = []
    for ch in text:
        kind = unicodedata.category(ch)
        if kind == "Cf" and ch != ZWJ:
            continue
        if kind == "Cc" and ch not in KEEP_CONTROLS:
            continue
        out.append(ch)
    return "".join(out)


def escape(text: str) -> str:
    """Entities for the three characters that could open or close framing (and the one that writes entities)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def unescape(text: str) -> str:
    """The inverse of `escape` (for tests and for reading quoted text back)."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def inline(text: str, limit: int = INLINE_CHARS) -> str:
    """One line of escaped text, for a person-supplied value inside a sentence (a name in a task)."""
    flat = " ".join(clean(text).split())
    if len(flat) > limit:
        flat = flat[: limit - 1].rstrip() + "…"
    return escape(flat)


def attr(text: str, limit: int = NAME_CHARS) -> str:
    """An attribute value: one escaped line with double quotes escaped too, so it cannot end the attribute."""
    return inline(text, limit).replace('"', "&quot;")


def named(name: str) -> str:
    """A person-influenced name inside one of our sentences: one escaped line in double quotes."""
    return f'"{attr(name)}"'


def quote(tag: str, text: str, limit: int | None = None, **attrs: str) -> str:
    """`<tag name="...">` text `</tag>`: the tag and attribute names are ours, every value is escaped.

    Multi-line text keeps its lines (without invisible characters); `limit` cuts it before escaping, so
    the cut can never fall inside an entity."""
    body = clean(text).strip()
    if limit is not None and len(body) > limit:
        body = body[: limit - 1].rstrip() + "…"
    head = "".join(f' {key}="{attr(value)}"' for key, value in attrs.items())
    return f"<{tag}{head}>\n{escape(body)}\n</{tag}>"
