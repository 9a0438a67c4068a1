"""Claims nobody can check, marked (pure): a ticket, issue or pull-request number a persona cites that appears
nowhere in what people gave (topic, context, their messages) is labelled "(unverified)" where it stands."""

from __future__ import annotations

import functools
import re

MARK = "(unverified)"
# "#4521", "issue 88", "ticket #12", "PR 7", "pull request #301", "bug ABC-123", "incident INC-4410", any case.
# The pattern opens with the characters a reference can start with, so `re` skips straight to each of them; the
# word before a "#" and the start of a named one's word are checked looking back once it has one. (Written as
# `\b(?:issues?|…)` under IGNORECASE, it was tried at every character: four times the cost on a turn's text.)
_REF = re.compile(
    r"[#IiTtBbPp]"
    r"(?:(?<=#)(?<![\w&/]#)\d+\b"
    r"|(?<!\w.)(?i:(?<=i)ssues?|(?<=t)ickets?|(?<=b)ugs?|(?<=p)rs?|(?<=p)ull\ requests?|(?<=i)ncidents?)"
    r"\s+\#?(?i:[A-Z][A-Z0-9]*-)?\d+\b)")


def _number(ref: str) -> str:
    return re.sub(r"^.*?(#?(?:[A-Za-z][A-Za-z0-9]*-)?\d+)$", r"\1", ref).lstrip("#").lower()


@functools.lru_cache(maxsize=256)
def _given(known: str) -> frozenset[str]:
    """The reference numbers in what people gave: the same for every turn of a discussion until someone writes."""
    return frozenset(_number(m.group(0)) for m in _REF.finditer(known))


def mark_unverified(text: str, known: str) -> str:
    """`text` with each cited reference that `known` never mentions followed by "(unverified)" (once)."""
    seen = _given(known)

    def label(m: re.Match[str]) -> str:
        ref = m.group(0)
        already = text[m.end():m.end() + len(MARK) + 1].strip().startswith(MARK)
        return ref if already or _number(ref) in seen else f"{ref} {MARK}"

    return _REF.sub(label, text)
