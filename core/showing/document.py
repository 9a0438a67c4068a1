"""The discussion as a living document: its latest synthesis, stance table and open questions, kept in one place."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from core.deliberation import links
from core.models import Discussion, Post
from core.storage.store import Tx

# Slack keeps it as a canvas, Discord as a synthesis.md attachment; the console writes its exports at the end.
DOCUMENT_PLATFORMS = {"slack", "discord"}


def document_key(discussion_id: str) -> str:
    return f"{discussion_id}:document"


def markdown(d: Discussion, syntheses: list[dict[str, Any]]) -> str:
    """The final synthesis (else the latest round's) as posted, with its stance table and the claims that fell;
    then every open question still on the record, and one line per earlier round."""
    finals = [s for s in syntheses if s["kind"] == "final"]
    rounds = [s for s in syntheses if s["kind"] == "round"]
    lines = [f"# {links.plain(' '.join(d.topic.split()))}", ""]  # a person's topic: one line, no live link
    if finals:
        lines += ["## Final synthesis", "", finals[-1]["text"], ""]
        later = [s for s in rounds if s["round"] > finals[-1]["round"]]
    else:
        later = rounds[-1:]
    for s in later:
        lines += [f"## Round {s['round']}", "", s["text"], ""]
    questions: list[str] = []
    for s in (finals[-1:] or []) + rounds[::-1]:
        for q in (s.get("data") or {}).get("open_questions") or []:
            if str(q) not in questions:
                questions.append(str(q))
    if questions:
        lines += ["## Open questions", "", *[f"- {q}" for q in questions[:20]], ""]
    earlier = [s for s in rounds if s not in later]
    if earlier:
        lines += ["## Round by round", ""]
        lines += [f"- Round {s['round']}: {(s.get('data') or {}).get('summary') or s['text'][:200]}" for s in earlier]
    return "\n".join(lines).strip() + "\n"


async def enqueue_document(tx: Tx, d: Discussion, synthesis_key: str, now: datetime) -> None:
    """After a synthesis: the document is written (the first time) or rewritten in place (every later time), in
    the transaction that records the synthesis, through the outbox like every post."""
    if d.platform not in DOCUMENT_PLATFORMS:
        return
    first = document_key(d.id)
    text = markdown(d, await tx.syntheses(d.id))
    post = Post(kind="document", key=first, title=f"Council: {d.topic}"[:120], text=text)
    if not await tx.enqueue(d.id, post, now):  # written before: this one rewrites it
        await tx.enqueue(d.id, post.model_copy(update={"key": f"{first}:{synthesis_key}", "replaces": first}), now)
