"""A message whose blocks Slack refused, re-rendered as plain sections that keep its lines, split where needed."""

from __future__ import annotations

from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.landed import After, find, identity, known, post_once
from adapters.slack.markup import SECTION_CHARS, flat, split_text

MESSAGE_CHARS = 9000  # of section text per message: well under the ~11k Slack takes
MAX_SECTIONS = 40  # of Slack's 50 blocks a message, with room for the notes
REFUSED = "_(Slack would not show this message's layout, so it is shown as plain text{buttons}.)_"
BUTTONS_LOST = "; its buttons could not be shown with it"


def lines(blocks: list[dict[str, Any]]) -> tuple[list[str], bool]:
    """Every text a reader saw in the blocks, one entry a block (fields and context elements on their own lines),
    and whether any block held buttons or menus."""
    out: list[str] = []
    interactive = False
    for b in blocks:
        kind = b.get("type")
        if kind == "header":
            out.append(f"*{(b.get('text') or {}).get('text', '')}*")
        elif kind == "section":
            texts = [(b.get("text") or {}).get("text", ""), *(f.get("text", "") for f in b.get("fields") or [])]
            out.append("\n".join(t for t in texts if t))
            interactive = interactive or bool((b.get("accessory") or {}).get("action_id"))
        elif kind == "context":
            out.append(" ".join(e.get("text", "") or e.get("alt_text", "") for e in b.get("elements") or []))
        elif kind == "image":
            out.append(str(b.get("alt_text") or ""))
        elif kind == "actions":
            interactive = True
        elif kind == "rich_text":
            out.append(str(b.get("text") or ""))
    return [t for t in out if t.strip()], interactive


def plain_parts(args: dict[str, Any]) -> list[dict[str, Any]]:
    """chat.postMessage arguments for each part: its lines as mrkdwn sections (a long line split at paragraphs,
    lines, then words), at most MESSAGE_CHARS a message; the first says why it looks plain. Without blocks, the
    notification text is what is split. Each part's metadata names it (`piece`), so each is found on its own."""
    found, interactive = lines(args.get("blocks") or [])
    texts = found or [str(args.get("text") or "")]
    note = REFUSED.format(buttons=BUTTONS_LOST if interactive else "")
    chunks = [note, *(piece for text in texts for piece in split_text(text, SECTION_CHARS))]
    groups: list[list[str]] = [[]]
    size = 0
    for chunk in chunks:
        if groups[-1] and (size + len(chunk) > MESSAGE_CHARS or len(groups[-1]) >= MAX_SECTIONS):
            groups.append([])
            size = 0
        groups[-1].append(chunk)
        size += len(chunk)
    parts = []
    for i, group in enumerate(groups):
        part = {k: v for k, v in args.items() if k not in ("blocks", "text", "metadata")}
        sections = group if i == 0 else [f"_(continued, {i + 1} of {len(groups)})_", *group]
        part["blocks"] = [{"type": "section", "text": {"type": "mrkdwn", "text": t}} for t in sections]
        part["text"] = flat(group[1:] if i == 0 else group, SECTION_CHARS) or flat(group, SECTION_CHARS)
        if args.get("metadata"):
            meta = args["metadata"]
            part["metadata"] = {**meta, "event_payload": {**(meta.get("event_payload") or {}), "piece": i}}
        parts.append(part)
    return parts


async def post_plain(client: AsyncWebClient, args: dict[str, Any], after: After | None) -> str:
    """The plain parts of a message whose blocks Slack refused, in order; the first one's ts is the post's. A
    top-level message's later parts go into its thread (a digest stays one top-level message)."""
    ts = ""
    for part in plain_parts(args):
        if ts and not part.get("thread_ts"):
            part["thread_ts"] = ts
        posted = await post_once(client, part, after)
        ts = ts or posted
        after = known(posted)
    return ts


async def edit_plain(client: AsyncWebClient, channel: str, thread: str, ts: str, args: dict[str, Any]) -> None:
    """An edit whose blocks Slack refused: the message becomes the first plain part; the parts after it are edited
    where an earlier edit posted them (found by their metadata), else posted after it."""
    args = {k: v for k, v in args.items() if k not in ("username", "icon_emoji", "icon_url")}
    first, *rest = plain_parts({"channel": channel, "thread_ts": thread, **args})
    await client.chat_update(channel=channel, ts=ts, text=first["text"], blocks=first["blocks"])
    after = known(ts)
    for part in rest:
        ident = identity(part)
        found = await find(client, channel, thread, ident, after) if ident else ""
        if found:
            await client.chat_update(channel=channel, ts=found, text=part["text"], blocks=part["blocks"])
        else:
            found = await post_once(client, part, after)
        after = known(found)
