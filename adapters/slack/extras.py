"""What the Slack app offers beyond the thread's own flow: the next round's topic form, Export, the Home tab."""

from __future__ import annotations

import contextlib
import json
import logging
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack import interactions as ix
from adapters.slack import translate as tr
from adapters.slack.home import MAX_DECISIONS, MAX_DISCUSSIONS, MAX_LOGS, NEW_ACTION, HomeFacts, Row, home_view
from adapters.slack.markup import escape
from adapters.slack.member import channels_of
from adapters.slack.place import Desk, Place, facts
from adapters.slack.views import start_view, topic_view
from core.control import commands as c
from core.control.service import UserError
from core.models import NextAction
from core.showing.export import export as export_doc
from core.showing.extras import chart_files
from core.showing.filing import artifacts

log = logging.getLogger(__name__)


async def ask_topic(council: Desk, intent: c.ChooseNextAction, place: Place, client: AsyncWebClient) -> None:
    """Deep dive / Different topic open a form with the council's suggestion, which the person may replace."""
    who, _ = await council.who(client, place)
    asker = intent.model_copy(update={**who.fields(), **facts(place)})
    ideas = await council.core.service.guard.suggestions(asker)  # nothing is read for who may not choose
    deep = intent.action == NextAction.DEEP_DIVE
    suggestion = (ideas[0] if ideas else "") if deep else (ideas[1] if len(ideas) > 1 else "")
    meta = ix.topic_metadata(intent.discussion_id, intent.action.value, place.channel, place.thread_ts or "",
                             intent.after_round)
    await council.show(client, place, topic_view(meta, deep, suggestion))

async def export_files(council: Desk, discussion_id: str, place: Place, client: AsyncWebClient) -> None:
    """What a team files, uploaded into the discussion's thread: synthesis.md, open-questions.md, the full
    transcript (JSON) and the charts synthesis.md shows, each picture with its alt text."""
    who, _ = await council.who(client, place)
    d = await council.core.service.guard.may(c.Command(**who.fields(), **facts(place)), discussion_id)
    core = council.core
    doc = await export_doc(core.store, d.id, pages=core.driver.config.pages, now=core.clock.now())
    assert doc is not None
    charts = await chart_files(core.store, d.id)
    files = artifacts(doc, charts)
    uploads: list[dict[str, Any]] = [
        {"content": files["synthesis.md"], "filename": "synthesis.md", "title": "Synthesis"},
        {"content": files["open-questions.md"], "filename": "open-questions.md", "title": "Open questions"},
        {"content": json.dumps(doc, indent=2, ensure_ascii=False), "filename": "transcript.json",
         "title": "Transcript"},
        *({"content": f.data, "filename": f.name, "title": f.title or f.name, "alt_txt": f.alt[:1000]}
          for f in charts)]
    try:
        await client.files_upload_v2(channel=d.channel, thread_ts=d.thread_ref or None, file_uploads=uploads,
                                     initial_comment=f"📦 Export of `{d.id}`, asked for by {escape(who.user_name)}.")
    except SlackApiError as exc:
        error = exc.response.get("error")
        log.warning("export of %s refused: %s", d.id, error)
        await council.tell(client, place, "Slack refused the upload" + (" (the app needs the files:write scope)"
                                                                     if error == "missing_scope" else "") +
                        f"; `python -m bot export {d.id}` on the server gives the same files.")

# App Home ---------------------------------------------------------------------------------------
async def home(council: Desk, team: str, user: str, client: AsyncWebClient) -> None:
    """Publish this person's Home tab: their discussions, schedules and digests (and, for admins, spend)."""
    try:
        facts = await home_facts(council, client, team, user)
        await client.views_publish(user_id=user, view=home_view(facts))
    except Exception:
        log.exception("could not publish the Home tab of %s", user)

async def home_facts(council: Desk, client: AsyncWebClient, team: str, user: str) -> HomeFacts:
    core, now = council.core, council.core.clock.now()
    me = await council.users.get(client, team, user)
    async with core.store.tx() as tx:
        everything = [d for d in await tx.discussions(limit=500) if d.platform == tr.PLATFORM and
                      d.workspace == team]
        schedules = [s for s in await tx.schedules() if s.platform == tr.PLATFORM and s.workspace == team
                     and s.created_by == user]
        start = now.replace(hour=0, minute=0, second=0, microsecond=0)
        spend = (await tx.usage_total([d.id for d in everything], since=start)).cost_usd if me.is_admin and \
            everything else 0.0
    chat = core.driver.chats.get(tr.PLATFORM)
    rows = []
    for d in [d for d in everything if d.created_by == user][:MAX_DISCUSSIONS]:
        thread = ""
        if chat is not None:
            with contextlib.suppress(Exception):
                thread = await chat.link(d)
        rows.append(Row(d, thread=thread, page=core.driver.config.pages.url(d.id, now, d.options.links)))
    asker = c.Command(user_id=user, is_admin=me.is_admin, groups=list(me.groups), platform=tr.PLATFORM,
                      workspace=team)
    member_of = await channels_of(client, user)
    decisions = await core.service.recall.recent(asker, member_of, limit=MAX_DECISIONS)
    # The logs of the person's channels that have decided something lately (Slack says they are in them).
    logged = [ch for ch in dict.fromkeys(d.channel for d in decisions) if ch in member_of][:MAX_LOGS]
    logs = [(place.channel, url) for place, url in core.service.recall.log_links(asker, logged)]
    defaults = {"budget per discussion": f"${core.service.config.budget_usd:.2f}",
                "time zone": council.default_tz}
    return HomeFacts(user=user, rows=rows, schedules=schedules, admin=me.is_admin, spend_today=spend,
                     defaults=defaults, decisions=decisions, logs=logs)

async def home_action(council: Desk, body: dict[str, Any], client: AsyncWebClient) -> None:
    """A button on the Home tab: New discussion opens the start form; Cancel ends a schedule or digest."""
    action = body["actions"][0]
    user = body.get("user") or {}
    team = (body.get("team") or {}).get("id") or user.get("team_id", "")
    place = Place(team=team, channel="", user=user.get("id", ""), trigger_id=body.get("trigger_id"))
    if action["action_id"] == NEW_ACTION:
        await client.views_open(trigger_id=place.trigger_id, view=start_view(ix.start_metadata(""),
                                                                             ask_channel=True))
        return
    kind = action["action_id"].rpartition(":")[2]
    _, _, target = str(action.get("value", "")).partition("|")
    try:
        who, _ = await council.who(client, place)
        # From the Home tab there is no channel: like a click in a direct message, a round schedule's discussion
        # is found for its starter; an admin finds any of the workspace's (the command carries the workspace, or
        # the discussion is "not found").
        cmd: c.Command = c.ScheduleRound(discussion_id=target, when="off", platform=tr.PLATFORM, workspace=team,
                                         in_dm=not who.is_admin) if kind == "round" else \
            c.SetDigest(platform=tr.PLATFORM, workspace=team, channel=target, cadence="off")
        await council.core.service.handle(cmd.model_copy(update=who.fields()))
    except UserError as exc:
        log.info("Home cancel refused for %s: %s", place.user, exc)
    await home(council, team, place.user, client)
