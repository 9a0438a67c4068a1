"""GET /log: a channel's (or, for admins, a workspace's) decision log behind a signed, expiring link, searchable."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web
from jinja2 import Environment

from core.ports import Clock
from core.showing.decision_log import LogLinks, Place, decision_log
from core.storage.store import Store

HEADERS = {
    "Cache-Control": "private, no-store",
    "Referrer-Policy": "no-referrer",  # the signature must not leak to the pages people click through to
    "X-Robots-Tag": "noindex",
    "X-Content-Type-Options": "nosniff",
    # No scripts; the search form submits here, and no other site may frame the log.
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; "
                               "base-uri 'none'; form-action 'self'",
    "X-Frame-Options": "DENY",
}
REFUSED = ("<!doctype html><meta charset=utf-8><title>Council</title>"
           "<p>This link is not valid or has expired. Ask Council for a fresh one: <code>/council decisions</code> "
           "answers with it, and the App Home shows it.</p>")
MAX_QUERY = 200


class Logs:
    """The log route; reads the store the pages were attached to (`store()`, None until the database is ready)."""

    def __init__(self, links: LogLinks, clock: Clock, store: Callable[[], Store | None], env: Environment) -> None:
        self.links, self.clock, self.store, self.env = links, clock, store, env

    async def log(self, request: web.Request) -> web.Response:
        q = request.query
        if not all(len(q.getall(name, [])) == 1 for name in ("p", "w", "c", "exp", "sig")) or \
                len(q.getall("q", [])) > 1:
            return web.Response(status=403, text=REFUSED, content_type="text/html", headers=HEADERS)
        place = Place(q["p"], q["w"], q["c"])
        if not self.links.valid(place, q["exp"], q["sig"], self.clock.now()):
            return web.Response(status=403, text=REFUSED, content_type="text/html", headers=HEADERS)
        store = self.store()
        if store is None:
            return web.Response(status=503, text="starting", headers=HEADERS)
        words = q.get("q", "").strip()
        if len(words) > MAX_QUERY:
            words = words[:MAX_QUERY]
        now = self.clock.now()
        entries = await decision_log(store, self.links.pages, place, words, now)
        html = self.env.get_template("log.html").render(
            place=place, entries=entries, words=words, hidden={**place.fields, "exp": q["exp"], "sig": q["sig"]})
        return web.Response(text=html, content_type="text/html", headers=HEADERS)
