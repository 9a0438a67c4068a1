"""GET /d/{id}: a discussion's page behind a signed, expiring link; Jinja2 with autoescaping, no JavaScript."""

from __future__ import annotations

import logging

from aiohttp import web
from jinja2 import Environment, PackageLoader, select_autoescape

from adapters.web.view import markdown, page
from core.ports import Clock
from core.showing.export import export
from core.showing.pages import PageLinks, version_of
from core.storage.store import Store

log = logging.getLogger(__name__)
HEADERS = {
    "Cache-Control": "private, no-store",
    "Referrer-Policy": "no-referrer",  # the signature must not leak to the sites people click through to
    "X-Robots-Tag": "noindex",
    "X-Content-Type-Options": "nosniff",
    # No scripts, nothing fetched, and no other site may frame the page (clickjacking).
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
                               "frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    "X-Frame-Options": "DENY",  # the same, for browsers that predate frame-ancestors
}
REFUSED = ("<!doctype html><meta charset=utf-8><title>Council</title>"
           "<p>This link is not valid or has expired. Ask for a fresh link from the discussion's thread.</p>")


def environment() -> Environment:
    env = Environment(loader=PackageLoader("adapters.web", "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True))
    env.filters["markdown"] = markdown
    return env


def render(doc: dict[str, object], env: Environment | None = None) -> str:
    """The discussion's page as one self-contained HTML file: styles inline, no scripts, nothing to fetch, so a
    saved copy (`python -m bot export ID --format html`) reads offline as the served page does."""
    return (env or environment()).get_template("discussion.html").render(**page(doc))


class Pages:
    """The page routes; `attach(store)` once the database is ready (until then they answer 503)."""

    def __init__(self, links: PageLinks, clock: Clock, store: Store | None = None) -> None:
        self.links, self.clock, self.store = links, clock, store
        self.env = environment()

    def attach(self, store: Store) -> None:
        self.store = store

    def routes(self) -> list[web.RouteDef]:
        return [web.get("/d/{discussion_id}", self.discussion)]

    async def discussion(self, request: web.Request) -> web.Response:
        did = request.match_info["discussion_id"]
        q = request.query
        once = all(len(q.getall(name, [])) == 1 for name in ("exp", "sig"))  # a link carries each exactly once
        version = version_of(q.get("v", "")) if len(q.getall("v", [])) <= 1 else None  # none: version 0
        if not once or version is None or not self.links.valid(did, q.get("exp", ""), q.get("sig", ""),
                                                                self.clock.now(), version):
            return web.Response(status=403, text=REFUSED, content_type="text/html", headers=HEADERS)
        if self.store is None:
            return web.Response(status=503, text="starting", headers=HEADERS)
        async with self.store.tx() as tx:  # a good signature, but of a version "Revoke links" has left behind
            d = await tx.discussion(did)
        if d is not None and d.options.links != version:
            return web.Response(status=403, text=REFUSED, content_type="text/html", headers=HEADERS)
        doc = await export(self.store, did)
        if doc is None:
            return web.Response(status=404, text=REFUSED, content_type="text/html", headers=HEADERS)
        html = render(doc, self.env)
        return web.Response(text=html, content_type="text/html", headers=HEADERS)


def application(pages: Pages) -> web.Application:
    """The pages on their own server (`python -m bot web`, for Discord and console deployments)."""
    app = web.Application()

    async def health(_: web.Request) -> web.Response:
        return web.json_response({"status": "ok" if pages.store is not None else "starting"},
                                 status=200 if pages.store is not None else 503)

    app.add_routes([web.get("/healthz", health), *pages.routes()])
    return app


async def serve(pages: Pages, host: str, port: int) -> web.AppRunner:
    runner = web.AppRunner(application(pages), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner
