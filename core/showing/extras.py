"""What a post gains when it is sent (never stored in the outbox): the page link, and charts with the synthesis."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from datetime import datetime

from core.models import Discussion, Persona, Post, PostFile, Turn
from core.showing import chart_material
from core.showing.pages import PageLinks
from core.storage.store import Store, Tx

log = logging.getLogger(__name__)
# Where a thread shows a picture with the final synthesis. A terminal cannot: its exports carry the charts, drawn
# when they are written, after the person at it has voted (a chart drawn with the post would show no vote of theirs).
CHART_PLATFORMS = {"slack", "discord"}


def is_final_synthesis(d: Discussion, post: Post) -> bool:
    return post.kind == "synthesis" and post.key.startswith(f"{d.id}:final:") and not post.key.endswith(":poll")


def starts_final_synthesis(d: Discussion, keys: Iterable[str]) -> bool:
    """Whether turns of these keys write the discussion's final synthesis."""
    return any(k.startswith(f"{d.id}:final:") and not k.endswith(":poll") for k in keys)


# Drawings started ahead, by discussion: what they show and the drawing (a task nothing refers to may be collected).
_AHEAD: dict[str, tuple[chart_material.ChartMaterial, asyncio.Future[list[PostFile]]]] = {}
AHEAD_MAX = 1000  # past this many (final posts never sent: a crash, a stop), the oldest are forgotten


async def draw_ahead(tx: Tx, d: Discussion, seats: tuple[list[Persona], list[Turn]] | None) -> None:
    """Start drawing the final synthesis's charts while its model writes it, on what they show now: the post then
    takes them as drawn, where drawing them stood on the critical path between the synthesis and its post (a tenth
    of a second or more a chart). A vote cast meanwhile changes what they show, and they are drawn again as the
    post goes out. A platform whose thread shows no charts draws none."""
    if d.platform not in CHART_PLATFORMS:
        return
    material = await chart_material.gather(tx, d.id, seats)
    while len(_AHEAD) >= AHEAD_MAX:
        _AHEAD.pop(next(iter(_AHEAD)))
    task = asyncio.ensure_future(asyncio.to_thread(_draw, material))
    task.add_done_callback(_drawn)
    _AHEAD[d.id] = (material, task)


def _drawn(task: asyncio.Future[list[PostFile]]) -> None:
    if not task.cancelled() and task.exception() is not None:  # the post draws them again, or goes without
        log.warning("could not draw the charts ahead", exc_info=task.exception())


async def _charts(material: chart_material.ChartMaterial, d: Discussion) -> list[PostFile]:
    """The charts of `material`: those drawn ahead when they show the same, else drawn now."""
    ahead = _AHEAD.pop(d.id, None)
    if ahead is not None and ahead[0] == material and not ahead[1].cancelled() and (
            not ahead[1].done() or ahead[1].exception() is None):
        return await asyncio.shield(ahead[1])
    return await asyncio.to_thread(_draw, material)


def _draw(material: chart_material.ChartMaterial) -> list[PostFile]:
    """The charts, drawn in a worker thread: matplotlib loads there at the first one (about 0.3 s of imports the
    event loop would otherwise stand still for), and only in a process that draws one."""
    from core.showing import charts

    return charts.draw(material)


async def decorate(store: Store, pages: PageLinks, d: Discussion, post: Post, now: datetime,
                   seats: Callable[[], tuple[list[Persona], list[Turn]] | None] = lambda: None) -> Post:
    """The header, the final synthesis and the synthesis document link to the discussion's page; the final synthesis
    carries its charts (`seats`: the discussion's personas and turns, where the caller keeps them) when it goes out
    as a new message. Its edits in place (a vote on its poll redraws it) carry none: no platform attaches files to an
    edit, and each redraw cost a chart's drawing (a tenth of a second of CPU or more) for every vote."""
    final = is_final_synthesis(d, post)
    if post.kind not in ("header", "document") and not final:
        return post
    update: dict[str, object] = {"page_url": pages.url(d.id, now, d.options.links)}
    if final and d.platform in CHART_PLATFORMS and not post.replaces:
        try:
            async with store.tx() as tx:
                material = await chart_material.gather(tx, d.id, seats())
            update["files"] = await _charts(material, d)
        except Exception:  # a chart is a courtesy: the synthesis goes out without it
            log.warning("could not draw the charts of %s", d.id, exc_info=True)
    return post.model_copy(update=update)


async def chart_files(store: Store, discussion_id: str) -> list[PostFile]:
    """The discussion's charts as they stand now (for its exports), drawn in a worker thread; none when they
    cannot be drawn (an export goes out without them rather than not at all)."""
    try:
        async with store.tx() as tx:
            material = await chart_material.gather(tx, discussion_id)
        return await asyncio.to_thread(_draw, material)
    except Exception:
        log.warning("could not draw the charts of %s", discussion_id, exc_info=True)
        return []
