"""The fact-check pass: the real anthropic SDK against the loopback Messages API with its web search tool."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from bot.settings import Settings
from bot.wiring import App, build_app
from core.control import commands as c
from core.control.replies import UserError
from core.deliberation import factcheck
from core.models import Discussion, Phase, Status
from core.ports import CitedText, Searched, Source
from tests.fakes.anthropic_server import FakeAnthropic, default_reply
from tests.fakes.chat import RecordingChat
from tests.fakes.llm import ScriptedLLM

CITED = ("https://research.example.org/survey-2025", "Survey 2025")
ANSWER = [
    ("[supported] Ada: most teams merge daily — ", []),
    ("the survey found 71% of teams merge at least daily.", [CITED]),
    ("\n[false] Contrarian: trunk-based development doubles incidents — the same survey ", []),
    ("found no rise in incidents.", [("https://stats.example.net/incidents", "Incident statistics")]),
    (" More at https://made-up.example.com/fake-study and [a study](https://invented.example.com/x).", []),
]


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic() as server:
        server.search_answer = ANSWER
        yield server


async def make_app(tmp_path: Path, fake: FakeAnthropic, chat: RecordingChat, **env: Any) -> App:
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'c.db'}",  # type: ignore[call-arg]
                        anthropic_api_key="sk-test", anthropic_base_url=fake.base_url, **env)
    return await build_app(settings, {"console": chat})


async def run(app: App, **start: Any) -> Discussion:
    reply = await app.service.handle(c.StartDiscussion(topic="Should we move to trunk-based development?",
                                                       experts=2, user_id="U1", **start))
    await app.driver.idle()
    async with app.store.tx() as tx:
        d = await tx.discussion(reply.discussion_id)
    assert d is not None
    return d


def check_posts(chat: RecordingChat, d: Discussion) -> list[str]:
    return [p.text for p in chat.posts(d.id) if p.persona is not None and p.persona.key == "fact_checker"]


async def test_a_checked_round_posts_the_cited_sources_as_links_and_never_a_made_up_url(
        tmp_path: Path, fake: FakeAnthropic) -> None:
    chat = RecordingChat()
    app = await make_app(tmp_path, fake, chat, council_search_max_uses=3,
                         council_search_blocked_domains="spam.example.com")
    try:
        d = await run(app, rounds=1, check=True)
        assert d.status == Status.DONE, d.blocked_reason
        [check] = check_posts(chat, d)
        assert "✅ **supported**" in check and "❌ **false**" in check
        assert "[Survey 2025](https://research.example.org/survey-2025)" in check
        assert "[Incident statistics](https://stats.example.net/incidents)" in check
        assert "made-up.example.com" not in check and "invented.example.com" not in check
        # The search went out as the documented server tool, with the cap and the domains from the settings.
        [asked] = [r for r in fake.requests if r.get("tools")]
        assert asked["tools"] == [{"type": "web_search_20250305", "name": "web_search", "max_uses": 3,
                                   "blocked_domains": ["spam.example.com"]}]
        # Checked after the rebuttals, before the cross-domain thinker, who reads the check in their prompt.
        titles = [p.title for p in chat.posts(d.id) if p.kind == "turn"]
        assert titles.index("Round 1 · Fact check") == max(i for i, t in enumerate(titles) if "Rebuttal" in t) + 1
        after = fake.requests[fake.requests.index(asked) + 1:]
        assert any("Fact-checker" in str(r["messages"]) and "**false**" in str(r["messages"]) for r in after)
        # The syntheses name the claim that fell, with its source.
        syntheses = [p.text for p in chat.posts(d.id) if p.kind == "synthesis"]
        assert all("**Claims that fell**" in s and "doubles incidents" in s for s in syntheses), syntheses
    finally:
        await app.close()


async def test_a_check_reads_right_where_links_were_taken_out(tmp_path: Path, fake: FakeAnthropic) -> None:
    fake.search_answer = [
        ("[supported] Ada: most teams merge daily — the survey found 71% merge daily ", [CITED]),
        ("(full figures at https://made-up.example.com/figures).", []),
        ("\n[false] Contrarian: incidents double — no rise was found (see https://invented.example.com/x ).",
         [("https://stats.example.net/incidents", "Incident statistics")]),
    ]
    chat = RecordingChat()
    app = await make_app(tmp_path, fake, chat)
    try:
        d = await run(app, rounds=1, check=True)
        [check] = check_posts(chat, d)
        assert check.startswith("🔎 I checked 2 claims in round 1 ("), check.splitlines()[0]
        assert "made-up.example.com" not in check and "invented.example.com" not in check
        assert "( )" not in check and "()" not in check and " at )" not in check and "(see )" not in check, check
        assert "71% merge daily." in check and "no rise was found." in check
    finally:
        await app.close()


async def test_the_search_tool_refused_says_it_could_not_check_and_the_discussion_goes_on(
        tmp_path: Path, fake: FakeAnthropic) -> None:
    fake.web_search = "refuse"
    chat = RecordingChat()
    app = await make_app(tmp_path, fake, chat)
    try:
        d = await run(app, rounds=1, check=True)
        assert d.status == Status.DONE
        [check] = check_posts(chat, d)
        assert check.startswith("🔎 I could not check the claims in round 1: the Anthropic API refused the web "
                                "search tool")
        assert "supported" not in check and "http" not in check
    finally:
        await app.close()


async def test_web_search_off_for_the_organization_tells_the_thread_an_admin_must_turn_it_on(
        tmp_path: Path, fake: FakeAnthropic) -> None:
    fake.web_search = "off"
    chat = RecordingChat()
    app = await make_app(tmp_path, fake, chat)
    try:
        d = await run(app, rounds=1, check=True)
        assert d.status == Status.DONE
        [check] = check_posts(chat, d)
        assert "an admin must turn web search on for the organization in the Anthropic Console" in check
        assert "(400)" not in check and "supported" not in check
    finally:
        await app.close()


async def test_a_paused_search_is_continued_and_the_check_posted(tmp_path: Path, fake: FakeAnthropic) -> None:
    fake.web_search = "pause"
    chat = RecordingChat()
    app = await make_app(tmp_path, fake, chat)
    try:
        d = await run(app, rounds=1, check=True)
        [check] = check_posts(chat, d)
        assert "❌ **false**" in check and "could not check" not in check
        assert "[Survey 2025](https://research.example.org/survey-2025)" in check
        assert fake.searches_run == 2  # run once, in the paused leg; the continuation searched nothing again
    finally:
        await app.close()


@pytest.mark.parametrize(("mode", "why"), [("unavailable", "the search tool answered unavailable"),
                                           ("pause_always", "all the searches a check may run")])
async def test_searches_that_fail_or_pause_are_no_check(tmp_path: Path, fake: FakeAnthropic, mode: str,
                                                        why: str) -> None:
    fake.web_search = mode
    chat = RecordingChat()
    app = await make_app(tmp_path, fake, chat)
    try:
        d = await run(app, rounds=1, check=True)
        [check] = check_posts(chat, d)
        assert "could not check" in check and why in check and "**false**" not in check
    finally:
        await app.close()


async def test_searches_are_charged_to_the_discussion_and_the_workspace(tmp_path: Path, fake: FakeAnthropic) -> None:
    chat = RecordingChat()
    app = await make_app(tmp_path, fake, chat, council_search_price_usd=1.0, council_budget_usd=50.0,
                         council_workspace_budget_usd_per_day=100.0)
    try:
        plain = await run(app, rounds=1)
        assert fake.searches_run == 0
        checked = await run(app, rounds=1, check=True)
        assert fake.searches_run == 2  # one search per cited page, within the cap
        # Tokens cost cents here; the two searches cost a dollar each.
        assert checked.cost_usd - plain.cost_usd == pytest.approx(2.0, abs=0.05)
        async with app.store.tx() as tx:
            today = await tx.workspace_spend("console", "", datetime(2000, 1, 1, tzinfo=UTC))
        assert today == pytest.approx(plain.cost_usd + checked.cost_usd)
    finally:
        await app.close()


async def test_fact_check_on_by_default_from_the_setting_and_off_with_no_check(
        tmp_path: Path, fake: FakeAnthropic) -> None:
    chat = RecordingChat()
    app = await make_app(tmp_path, fake, chat, council_fact_check="on")
    try:
        assert check_posts(chat, await run(app, rounds=1))
        assert not check_posts(chat, await run(app, rounds=1, check=False))
    finally:
        await app.close()


@pytest.mark.parametrize(("flow", "rounds", "after"), [("council", 2, "Opening position"),
                                                       ("meeting", 2, "Proposal"), ("open", 1, "Speech")])
async def test_other_flows_are_checked_where_they_make_claims(
        tmp_path: Path, fake: FakeAnthropic, flow: str, rounds: int, after: str) -> None:
    chat = RecordingChat()
    app = await make_app(tmp_path, fake, chat)
    try:
        d = await run(app, rounds=rounds, check=True, flow=flow)
        assert d.status == Status.DONE, d.blocked_reason
        titles = [p.title for p in chat.posts(d.id) if p.kind == "turn"]
        first = titles.index("Round 1 · Fact check")
        assert after.lower() in titles[first - 1].lower(), titles
        if flow == "council":  # after each round
            assert titles.count("Round 2 · Fact check") == 1
    finally:
        await app.close()


# offline, and one post on request ------------------------------------------------------------------
@pytest.fixture
async def offline_app(tmp_path: Path) -> AsyncIterator[tuple[App, RecordingChat]]:
    chat = RecordingChat()
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'o.db'}")  # type: ignore[call-arg]
    app = await build_app(settings, {"console": chat}, llm=ScriptedLLM())
    yield app, chat
    await app.close()


async def test_the_offline_model_says_it_could_not_check(offline_app: tuple[App, RecordingChat]) -> None:
    app, chat = offline_app
    d = await run(app, rounds=1, check=True)
    [check] = check_posts(chat, d)
    assert "could not check" in check and "offline model cannot search the web" in check


def with_a_figure(body: dict[str, Any]) -> str:
    """The model's words, each statement with a figure in it: a claim someone can check."""
    said = default_reply(body)
    statement = "Initial statement" in str(body["messages"][-1])
    return said.replace(" Here is my view", " Our deploys fail 12% of the time. Here is my view") if statement else said


async def test_check_claims_on_one_post_checks_that_post_alone(tmp_path: Path, fake: FakeAnthropic) -> None:
    chat = RecordingChat()
    fake.reply = with_a_figure
    app = await make_app(tmp_path, fake, chat)
    try:
        d = await run(app)  # no --check: waits for people after round 1
        assert d.status == Status.WAITING and not check_posts(chat, d)
        statement = next(p for p in chat.posts(d.id) if "Initial statement" in p.title)
        [button] = [a for a in statement.actions if a.id == "check:claims"]
        assert button.menu, "offered in the post's menu"
        bare = [p for p in chat.posts(d.id) if p.persona is not None and "12%" not in p.text]
        assert bare and not any(a.id == "check:claims" for p in bare for a in p.actions), "no claim, no check"
        cmd = c.CheckClaims(discussion_id=d.id, turn_key=button.value, user_id="U2", in_channel="")
        reply = await app.service.handle(cmd)
        assert "checking that post" in reply.text
        await app.driver.idle()
        [check] = check_posts(chat, d)
        assert check.startswith(f"🔎 I checked 2 claims in {statement.persona.name}'s post")  # type: ignore[union-attr]
        [asked] = [r for r in fake.requests if r.get("tools")]
        assert statement.text.split("\n")[0][:60] in str(asked["messages"])
        again = await app.service.handle(cmd)
        assert "checked already" in again.text
        assert len(check_posts(chat, d)) == 1
        with pytest.raises(UserError):  # a check post itself is not a claim to check
            await app.service.handle(cmd.model_copy(update={"turn_key": factcheck.requested_key(d.id, button.value)}))
    finally:
        await app.close()


async def test_check_claims_works_on_a_finished_discussion(offline_app: tuple[App, RecordingChat]) -> None:
    app, chat = offline_app
    d = await run(app, rounds=1)
    assert d.status == Status.DONE
    statement = next(p for p in chat.posts(d.id) if "Initial statement" in p.title)
    await app.service.handle(c.CheckClaims(discussion_id=d.id, turn_key=statement.key, user_id="U2", in_channel=""))
    await app.driver.idle()
    [check] = check_posts(chat, d)
    assert "could not check" in check


async def test_a_check_cut_short_with_its_process_is_picked_up_by_the_sweep(tmp_path: Path) -> None:
    chat, llm = RecordingChat(), ScriptedLLM()
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 's.db'}")  # type: ignore[call-arg]
    app = await build_app(settings, {"console": chat}, llm=llm)
    try:
        d = await run(app, rounds=1)
        statement = next(p for p in chat.posts(d.id) if "Initial statement" in p.title)
        gate, searching = llm.hold(), asyncio.Event()

        async def under_way() -> None:
            searching.set()

        llm.on_phase[Phase.FACT_CHECK] = under_way
        await app.service.handle(c.CheckClaims(discussion_id=d.id, turn_key=statement.key, user_id="U2",
                                               in_channel=""))
        await searching.wait()  # the search is under way (held at the gate)
        await app.driver.shutdown()  # the process stops mid-check and gives its lease back
        llm.gate = None
        gate.set()
        assert check_posts(chat, d) == []
        assert await app.driver.sweep() == [d.id]  # a finished discussion, but a check is owed
        await app.driver.idle()
        [check] = check_posts(chat, d)
        assert "could not check" in check
    finally:
        await app.close()


# pure -----------------------------------------------------------------------------------------------
def test_sources_belong_to_the_claim_whose_words_cite_them() -> None:
    searched = Searched(searches=2, blocks=[CitedText(text=t, sources=[Source(url=u, title=n) for u, n in cited])
                                            for t, cited in ANSWER])
    found = factcheck.claims(searched)
    assert [x.verdict for x in found] == ["supported", "false"]
    assert [s.url for s in found[0].sources] == ["https://research.example.org/survey-2025"]
    assert [s.url for s in found[1].sources] == ["https://stats.example.net/incidents"]
    assert "http" not in found[1].text and "a study" in found[1].text


def test_one_domain_list_or_the_other() -> None:
    with pytest.raises(ValidationError, match="not both"):
        Settings(_env_file=None, council_search_allowed_domains="a.org", council_search_blocked_domains="b.org")  # type: ignore[call-arg]
    allowed = Settings(_env_file=None, council_search_allowed_domains=" a.org, b.org ,")  # type: ignore[call-arg]
    assert allowed.search_domains == (["a.org", "b.org"], [])


def test_a_bare_domain_the_checker_wrote_is_shown_as_code_and_cited_sources_stay_links() -> None:
    from core.ports import CitedText, Searched, Source

    searched = Searched(searches=1, blocks=[
        CitedText(text="[false] Ada: the login moved to sso-login.evil.example/auth. "),
        CitedText(text="The vendor's page says otherwise.", sources=[Source(url="https://vendor.example/sso",
                                                                               title="SSO")])])
    [claim] = factcheck.claims(searched)
    assert "`sso-login.evil.example/auth`." in claim.text
    post = factcheck.text(searched, [claim], "Ada's post")
    assert "[SSO](https://vendor.example/sso)" in post  # the cited source, a link Council built
