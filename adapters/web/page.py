"""GET /d/{id}: a discussion's page behind a signed, expiring link (Jinja2, autoescaped), and /d/{id}/live, the same
page again only when something on it changed, which the page's one small script polls while the discussion runs."""

from __future__ import annotations

import base64
import hashlib
import logging
from dataclasses import dataclass
from importlib.resources import files

from aiohttp import web
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from adapters.web.log import Logs
from adapters.web.view import markdown, page
from core.models import PostFile
from core.ports import Clock
from core.showing import pollcsv
from core.showing.decision_log import LogLinks
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
# The one script a served page runs: it asks /d/{id}/live for the page again while the discussion runs and swaps
# the page's content when it changed. Allowed by its hash alone; it fetches from this server only.
LIVE_SCRIPT = files("adapters.web").joinpath("templates/live.js").read_text(encoding="utf-8")
_LIVE_HASH = base64.b64encode(hashlib.sha256(LIVE_SCRIPT.encode()).digest()).decode()
LIVE_HEADERS = {**HEADERS, "Content-Security-Policy": HEADERS["Content-Security-Policy"].replace(
    "default-src 'none';", f"default-src 'none'; script-src 'sha256-{_LIVE_HASH}'; connect-src 'self';")}
# A saved copy has no server to send the headers: the same policy, as the meta tag allows it (no framing rules).
SAVED_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
REFUSED = ("<!doctype html><meta charset=utf-8><title>Council</title>"
           "<p>This link is not valid or has expired. Ask for a fresh link from the discussion's thread.</p>")


def environment() -> Environment:
    env = Environment(loader=PackageLoader("adapters.web", "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True))
    env.filters["markdown"] = markdown
    return env


@dataclass(frozen=True)
class Live:
    """What a served page needs to follow along: its change mark, how often to ask, and the script that asks."""

    mark: str
    every_ms: int
    script: Markup = Markup(LIVE_SCRIPT)  # noqa: RUF009  # safe: our own file, allowed by its hash
    csv: str = ""  # the polls' CSV links, the poll's number between these two halves ("" : none offered)
    csv_query: str = ""


def render(doc: dict[str, object], env: Environment | None = None, live: Live | None = None,
           texts: dict[str, str] | None = None, charts: list[PostFile] | None = None) -> str:
    """The discussion's page as one self-contained HTML file: styles inline, nothing to fetch, so a saved copy
    (`python -m bot export ID --format html`) reads offline as the served page does. Served (`live`), it also shows
    the progress, the words being written (`texts`, by turn key) and the script that keeps it current. `charts`
    are embedded as pictures; a copy not served carries its own policy forbidding any script."""
    return (env or environment()).get_template("discussion.html").render(**page(doc, texts, charts), live=live,
                                                                         policy=SAVED_POLICY)


class Pages:
    """The page routes; `attach(store)` once the database is ready (until then they answer 503)."""

    def __init__(self, links: PageLinks, clock: Clock, store: Store | None = None, every_s: float = 3.0) -> None:
        self.links, self.clock, self.store = links, clock, store
        self.every_ms = int(every_s * 1000)  # how often an open page asks whether anything changed
        self.env = environment()
        self.logs = Logs(LogLinks(links), clock, lambda: self.store, self.env)

    def attach(self, store: Store) -> None:
        self.store = store

    def routes(self) -> list[web.RouteDef]:
        return [web.get("/d/{discussion_id}", self.discussion), web.get("/d/{discussion_id}/live", self.live),
                web.get(r"/d/{discussion_id}/poll/{n:\d{1,6}}.csv", self.poll_csv), web.get("/log", self.logs.log)]

    def _signed(self, request: web.Request) -> int | None:
        """The key version of a good link to this page, None when the link is not good."""
        did, q = request.match_info["discussion_id"], request.query
        once = all(len(q.getall(name, [])) == 1 for name in ("exp", "sig"))  # a link carries each exactly once
        version = version_of(q.get("v", "")) if len(q.getall("v", [])) <= 1 else None  # none: version 0
        if not once or version is None or not self.links.valid(did, q.get("exp", ""), q.get("sig", ""),
                                                                self.clock.now(), version):
            return None
        return version

    async def discussion(self, request: web.Request) -> web.Response:
        return await self._page(request, live=False)

    async def live(self, request: web.Request) -> web.Response:
        """The page again when its mark differs from the one the browser has (If-None-Match), else 304: one small
        query per poll. The link is checked as the page's is, its key version included, at every poll."""
        return await self._page(request, live=True)

    async def _checked(self, request: web.Request) -> web.Response | str:
        """The page's mark when the link is good for the discussion's current key version, else the refusal."""
        did = request.match_info["discussion_id"]
        version = self._signed(request)
        if version is None:
            return web.Response(status=403, text=REFUSED, content_type="text/html", headers=HEADERS)
        if self.store is None:
            return web.Response(status=503, text="starting", headers=HEADERS)
        async with self.store.tx() as tx:  # a good signature, but of a version "Revoke links" has left behind
            marked = await tx.page_mark(did)
        if marked is None:
            return web.Response(status=404, text=REFUSED, content_type="text/html", headers=HEADERS)
        mark, links = marked
        if links != version:
            return web.Response(status=403, text=REFUSED, content_type="text/html", headers=HEADERS)
        return mark

    async def poll_csv(self, request: web.Request) -> web.Response:
        """One poll's results as CSV, behind the page's own link: what the page shows of it and nothing more."""
        checked = await self._checked(request)
        if isinstance(checked, web.Response):
            return checked
        did, number = request.match_info["discussion_id"], int(request.match_info["n"])
        doc = await export(self.store, did) if self.store is not None else None
        if doc is None or not 1 <= number <= pollcsv.count(doc):
            return web.Response(status=404, text="This discussion has no such poll.", headers=HEADERS)
        named = f'attachment; filename="{did}-poll-{number}.csv"'
        return web.Response(body=pollcsv.write(doc, number).encode(), content_type="text/csv", charset="utf-8",
                            headers={**HEADERS, "Content-Disposition": named})

    async def _page(self, request: web.Request, *, live: bool) -> web.Response:
        did = request.match_info["discussion_id"]
        checked = await self._checked(request)
        if isinstance(checked, web.Response):
            return checked
        mark = checked
        assert self.store is not None
        etag = f'"{mark}"'
        if live and etag in request.headers.get("If-None-Match", ""):
            return web.Response(status=304, headers={**LIVE_HEADERS, "ETag": etag})
        doc = await export(self.store, did)
        if doc is None:
            return web.Response(status=404, text=REFUSED, content_type="text/html", headers=HEADERS)
        async with self.store.tx() as tx:
            texts = await tx.live_texts(did)
        html = render(doc, self.env, Live(mark, self.every_ms, csv=f"/d/{did}/poll/", csv_query=request.query_string),
                      texts)
        return web.Response(text=html, content_type="text/html", headers={**LIVE_HEADERS, "ETag": etag})


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
