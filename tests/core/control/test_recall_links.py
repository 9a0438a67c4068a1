"""Which decision-log links a person is handed (their channels', the workspace's for admins); where records show."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from urllib.parse import parse_qs, urlsplit

import pytest

from core.control import commands as c
from core.control.permissions import Policy
from core.control.recall import Recall, shown_in
from core.control.replies import Reply
from core.models import Decision
from core.showing.decision_log import LOG_TTL, LogLinks, Place
from core.showing.pages import PageLinks
from core.storage.db import make_engine
from core.storage.store import Store
from tests.fakes.clock import FakeClock

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
PAGES = PageLinks(base_url="https://council.example/", secret="s3cret")


async def never_started(cmd: c.StartDiscussion) -> Reply:
    raise AssertionError("nothing starts here")


@pytest.fixture
async def store(sqlite_url: str) -> AsyncIterator[Store]:
    s = Store(make_engine(sqlite_url))
    yield s
    await s.close()


def asker(admin: bool = False, user: str = "U1") -> c.Command:
    return c.Command(user_id=user, is_admin=admin, platform="slack", workspace="T1", in_channel="C1")


def opens(logs: LogLinks, place: Place, url: str) -> bool:
    """The link is to `place`'s log, signed for it, and good for a day from now."""
    parts = urlsplit(url)
    q = {k: v[0] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
    return (url.startswith("https://council.example/log?")
            and (q["p"], q["w"], q["c"]) == (place.platform, place.workspace, place.channel)
            and int(q["exp"]) == int((NOW + LOG_TTL).timestamp())
            and logs.valid(place, q["exp"], q["sig"], NOW))


async def test_a_member_gets_the_logs_of_the_channels_given_once_each(store: Store) -> None:
    logs = LogLinks(PAGES)
    recall = Recall(store, Policy(), never_started, logs, FakeClock(NOW))
    given = recall.log_links(asker(), ["C1", "C2", "C1", ""])
    assert [p for p, _ in given] == [Place("slack", "T1", "C1"), Place("slack", "T1", "C2")]
    assert all(opens(logs, p, url) for p, url in given)
    assert recall.log_links(asker(), []) == []


async def test_an_admin_also_gets_the_workspaces_log(store: Store) -> None:
    logs = LogLinks(PAGES)
    # Named an admin by the deployment, not by the platform: an admin all the same.
    recall = Recall(store, Policy(admins=frozenset({"U1"})), never_started, logs, FakeClock(NOW))
    given = recall.log_links(asker(), ["C1"])
    assert [p for p, _ in given] == [Place("slack", "T1", "C1"), Place("slack", "T1", "")]
    assert all(opens(logs, p, url) for p, url in given)
    # Another person under the same deployment is no admin: their channel's log only.
    assert [p for p, _ in recall.log_links(asker(user="U2"), ["C1"])] == [Place("slack", "T1", "C1")]
    # The platform's word is enough too, for the workspace's log alone when no channel is given.
    platform_admin = Recall(store, Policy(), never_started, logs, FakeClock(NOW))
    [(place, url)] = platform_admin.log_links(asker(admin=True), [])
    assert place == Place("slack", "T1") and opens(logs, place, url)


async def test_no_log_links_without_pages_a_secret_or_a_clock(store: Store) -> None:
    clock = FakeClock(NOW)
    assert Recall(store, Policy(), never_started, None, clock).log_links(asker(admin=True), ["C1"]) == []
    assert Recall(store, Policy(), never_started, LogLinks(PAGES), None).log_links(asker(admin=True), ["C1"]) == []
    unsigned = LogLinks(PageLinks(base_url="https://council.example/"))
    assert Recall(store, Policy(), never_started, unsigned, clock).log_links(asker(admin=True), ["C1"]) == []


def test_a_public_record_may_go_into_any_unshared_channel_a_private_one_stays_home() -> None:
    public = Decision(discussion_id="d1", platform="slack", workspace="T1", channel="C1", topic="T?",
                      flow="meeting", decided="Yes.", decided_at=NOW)
    private = public.model_copy(update={"private": True})
    assert shown_in(public, "C2") and shown_in(public, "C1")
    assert not shown_in(private, "C2") and shown_in(private, "C1")
    assert not shown_in(public, "C2", shared=True) and shown_in(public, "C1", shared=True)
