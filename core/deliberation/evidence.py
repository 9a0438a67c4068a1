"""Claims nobody can check, marked (pure): a ticket, issue or pull-request number a persona cites that appears
nowhere in what people gave (topic, context, their messages) is labelled "(unverified)" where it stands."""

from __future__ import annotations

import re

MARK = "(unverified)"
# "#4521", "issue 88", "ticket #12", "PR 7", "pull request #301", "bug ABC-123", "incident INC-4410"
_REF = re.compile(
    r"(?<![\w&/])#\d+\b"
    r"|\b(?:issues?|tickets?|bugs?|PRs?|pull requests?|incidents?)\s+#?(?:[A-Z][A-Z0-9]*-)?\d+\b",
    re.IGNORECASE,
)


def _number(ref: str) -> str:
    return re.sub(r"^.*?(#?(?:[A-Za-z][A-Za-z0-9]*-)?\d+)$", r"\1", ref).lstrip("#").lower()


def mark_unverified(text: str, known: str) -> str:
    """`text` with each cited reference that `known` never mentions followed by "(unverified)" (once)."""
    seen = {_number(m.group(0)) for m in _REF.finditer(known)}

    def label(m: re.Match[str]) -> str:
        ref = m.group(0)
        already = text[m.end():m.end() + len(MARK) + 1].strip().startswith(MARK)
        return ref if already or _number(ref) in seen else f"{ref} {MARK}"

    return _REF.sub(label, text)
