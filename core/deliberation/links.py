"""Links the model wrote, made plain text (pure): a persona's link or address is shown, never clickable.

Only links Council builds itself (a check's cited sources, its own pages) may be links. A model's Markdown link
`[label](url)` becomes `label (url)`, a chat link `<url|label>` the same, and every URL or bare domain left is
set as code: no chat turns code into a link, so `sso-login.evil.example/auth` cannot pose as a sign-in page under
a persona's name. Code the model wrote stays as it is (it is not linked either).
"""

from __future__ import annotations

import re
from typing import Any

_MD_LINK = re.compile(r"\[([^\[\]\n]*)\]\(\s*([^()\s]*(?:\([^()\s]*\)[^()\s]*)*)\s*\)")
_CHAT_LINK = re.compile(r"<((?:https?://|www\.|mailto:)[^|<>\s]*)\|([^<>]*)>", re.I)
_ANGLE_URL = re.compile(r"<((?:https?://|www\.|mailto:)[^<>\s]*)>", re.I)
_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
# A URL with a scheme or www., or a domain of at least two labels ending in a letters-only top-level label,
# with its path; trailing punctuation is the sentence's.
_ADDRESS = re.compile(
    r"(?i)(?:\b(?:https?|ftp)://|\bmailto:|\bwww\.)[^\s<>`\"]+"
    r"|\b(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,24}\b(?::\d+)?(?:/[^\s<>`\"]*)?")
_TRAILING = ".,;:!?)]}'\u2019\u201d"


def _code(m: re.Match[str]) -> str:
    address = m.group(0)
    kept = address.rstrip(_TRAILING)
    return f"`{kept}`{address[len(kept):]}" if kept else address


# An address needs one of these: "://", "mailto:", "www." or a dot and two letters (a domain's last label). Each is
# found by a scan that skips to its first character; the address pattern itself is tried at every word, and most
# turns hold no address at all ("e.g.", "1.5" or "..." are none of these).
_TLD = re.compile(r"\.[A-Za-z]{2}")
_WWW = re.compile(r"[wW][wW][wW]\.")
_MAILTO = re.compile(r"[mM][aA][iI][lL][tT][oO]:")


def _addresses(text: str) -> str:
    if "://" in text or _TLD.search(text) or _WWW.search(text) or _MAILTO.search(text):
        return _ADDRESS.sub(_code, text)
    return text


def plain(text: str) -> str:
    """The model's text with every link it wrote made plain text, and every address it wrote set as code."""
    if "](" in text:
        text = _MD_LINK.sub(lambda m: f"{m.group(1)} ({m.group(2)})" if m.group(2) else m.group(1), text)
    if "<" in text:
        text = _CHAT_LINK.sub(lambda m: f"{m.group(2)} ({m.group(1)})", text)
        text = _ANGLE_URL.sub(r"\1", text)
    if "`" not in text:
        return _addresses(text)
    out, at = [], 0
    for code in _CODE.finditer(text):
        out += [_addresses(text[at:code.start()]), code.group(0)]
        at = code.end()
    out.append(_addresses(text[at:]))
    return "".join(out)


def plain_data(value: Any) -> Any:
    """Every string of a structured answer made plain (`plain`), keys and shape kept."""
    if isinstance(value, str):
        return plain(value)
    if isinstance(value, list):
        return [plain_data(v) for v in value]
    if isinstance(value, dict):
        return {k: plain_data(v) for k, v in value.items()}
    return value
