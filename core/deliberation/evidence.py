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


# What makes a claim someone can check against sources, in four kinds. A figure: a percentage, an amount of money,
# a ratio ("1 in 3"), a multiple ("3x"), a number with a unit or a count of things, any number of two digits or more.
_FIGURE = (r"\d+(?:[.,]\d+)?\s?(?:%|percent\b|per\ cent\b)"
           r"|[$€£¥]\s?\d"
           r"|\b\d+\s(?:in|of|out\ of)\s\d+\b"
           r"|\b\d+(?:[.,]\d+)?\s?(?:x|×)(?!\w)"
           r"|\b\d+(?:[.,]\d+)?(?:\s|-)?(?:k|m|bn|million|billion|thousand|hundred|ms|milliseconds?|seconds?|minutes?"
           r"|hours?|days?|weeks?|months?|years?|[kmgt]b|users?|customers?|engineers?|people|teams?|requests?"
           r"|incidents?|outages?|tickets?|bugs?|releases?|deploys?|deployments?|services?|servers?|lines?"
           r"|employees?|dollars|euros|pounds)\b"
           r"|\b\d{2,}(?:[.,]\d+)?\b")
# A date: a year (covered above), a month (May only with a day or a year: "may" is mostly a verb), a quarter.
_DATE = (r"\b(?:January|February|March|April|June|July|August|September|October|November|December)\b"
         r"|\bMay\s\d|\bQ[1-4]\b")
# A named source or incident: what a study, survey or report found, "according to", an outage or breach named.
_SOURCE = (r"(?i:\baccording\ to\b|\bresearch\ (?:by|from|shows)\b|\bpublished\b"
           r"|\b(?:a|an|the|one|this|that|their|our|its)\s+(?:[\w-]+\s+){0,2}?"
           r"(?:study|studies|survey|report|paper|audit|benchmark|post-?mortem|outage|breach|recall|lawsuit)\b)")
_CLAIM = re.compile("|".join((_FIGURE, _DATE, _SOURCE)))


def checkable(text: str) -> bool:
    """Whether `text` makes a claim someone could check against sources: a concrete figure, a date, a named source,
    or an incident or reference the rules above find (opinions, proposals and questions alone are not)."""
    return _CLAIM.search(text) is not None or _REF.search(text) is not None
