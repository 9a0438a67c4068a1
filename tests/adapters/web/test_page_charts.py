"""`export --format html` embeds the charts it writes beside the page, each with its alt text, and the saved copy
carries a policy that runs no script (there is no server to send one)."""

from __future__ import annotations

import asyncio
import base64
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.__main__ import cli
from bot.settings import Settings
from bot.wiring import build_app
from core.control import commands as c
from tests.fakes.chat import RecordingChat
from tests.fakes.llm import ScriptedLLM


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.images: list[dict[str, str]] = []
        self.metas: list[dict[str, str]] = []
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "img":
            self.images.append(a)
        elif tag == "meta":
            self.metas.append(a)
        elif tag == "script":
            self.scripts += 1


def finished(db: Path) -> str:
    """A moderated discussion run to its end, in the database the command line then reads."""
    async def go() -> str:
        settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{db}")  # type: ignore[call-arg]
        app = await build_app(settings, {"console": RecordingChat("console")}, llm=ScriptedLLM())
        try:
            did = (await app.service.handle(c.StartDiscussion(
                in_channel="C1", topic="Should we ship on Fridays?", platform="console", channel="C1",
                user_id="U1", user_name="Dana", rounds=1))).discussion_id
            await app.driver.idle()
            return did
        finally:
            await app.close()
    return asyncio.run(go())


def test_the_saved_page_shows_its_charts_with_alt_text_and_runs_no_script(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    did = finished(tmp_path / "council.db")
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "COUNCIL_", "DATABASE_URL", "SLACK_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'council.db'}")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "saved"
    done = CliRunner().invoke(cli, ["export", did, "--format", "html", "--out", str(out)])
    assert done.exit_code == 0, done.output
    html = (out / "discussion.html").read_text(encoding="utf-8")
    page = Page()
    page.feed(html)
    pngs = {p.name: p.read_bytes() for p in out.glob("*.png")}
    assert pngs, "the charts are written beside the page"
    embedded = [base64.b64decode(i["src"].removeprefix("data:image/png;base64,")) for i in page.images]
    assert sorted(embedded) == sorted(pngs.values()), "each chart written beside the page is shown in it, once"
    assert all(i["src"].startswith("data:image/png;base64,") for i in page.images), "nothing to fetch"
    assert all(len(i["alt"].split()) >= 3 for i in page.images), "each picture says what it shows"
    assert page.scripts == 0
    [policy] = [m["content"] for m in page.metas if m.get("http-equiv", "").lower() == "content-security-policy"]
    assert "default-src 'none'" in policy and "script-src" not in policy and "img-src data:" in policy
    # Printed, it is the same page, pictures and all.
    printed = CliRunner().invoke(cli, ["export", did, "--format", "html"])
    assert printed.exit_code == 0 and len(re.findall(r"<img ", printed.stdout)) == len(pngs)
