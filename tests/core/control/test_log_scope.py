"""Who is handed which decision log: the channels they are in (as the platform says), the workspace's for admins
only, and no log when asked from a direct message or without pages."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from core.control import commands as c
from core.control.permissions import Policy
from core.control.recall import Recall, logs_for
from core.control.replies import Reply
from core.showing.decision_log import LogLinks, Place
from core.showing.pages import PageLinks
from core.storage.db import make_engine, migrate
from core.storage.store import Store
from tests.fakes.clock import FakeClock

LINKS = LogLinks(PageLinks("https://council.example.test", "web-secret-for-tests-at-least-32-bytes"))


def test_a_member_gets_their_channels_logs_and_an_admin_the_workspaces_too() -> None:
    member = c.Command(platform="slack", workspace="T1", user_id="U1")
    admin = c.Command(platform="slack", workspace="T1", user_id="U9", is_admin=True)
    assert logs_for(Policy(), member, ["C1", "", "C2", "C1"]) == [Place("slack", "T1", "C1"),
                                                                 Place("slack", "T1", "C2")]
    assert logs_for(Policy(), member, []) == []
    assert logs_for(Policy(), admin, ["C1"]) == [Place("slack", "T1", "C1"), Place("slack", "T1")]
    named = Policy(admins=frozenset({"U1"}))
    assert Place("slack", "T1") in logs_for(named, member, []), "an admin named in the settings counts"


async def search(tmp_path: object, cmd: c.SearchDecisions, logs: LogLinks | None) -> Reply:
    engine = make_engine(f"sqlite+aiosqlite:///{tmp_path}/c.db")
    await migrate(engine)
    store = Store(engine)

    async def start(_: c.StartDiscussion) -> Reply:
        return Reply(text="")

    try:
        return await Recall(store, Policy(), start, logs, FakeClock()).search(cmd)
    finally:
        await store.close()


async def test_the_search_answer_links_the_log_of_the_channel_asked_from(tmp_path: object) -> None:
    asked = c.SearchDecisions(platform="slack", workspace="T1", user_id="U1", in_channel="G1")
    reply = await search(tmp_path, asked, LINKS)
    [url] = [part.split("](")[1].rstrip(")") for part in reply.text.split("\n") if "decision log" in part]
    fields = {k: v[0] for k, v in parse_qs(urlsplit(url).query, keep_blank_values=True).items()}
    assert (fields["p"], fields["w"], fields["c"]) == ("slack", "T1", "G1")
    assert LINKS.valid(Place("slack", "T1", "G1"), fields["exp"], fields["sig"], FakeClock().now())
    in_dm = asked.model_copy(update={"in_dm": True, "in_channel": "D1"})
    assert "decision log" not in (await search(tmp_path, in_dm, LINKS)).text
    assert "decision log" not in (await search(tmp_path, asked, None)).text, "no pages: no link"
