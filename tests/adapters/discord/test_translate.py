"""Pure translation of recorded Discord payloads into commands."""

from __future__ import annotations

import pytest

from adapters.discord import translate as t
from core.control import commands as c
from core.models import NextAction, Persona, Role
from tests.fakes.discord_payloads import fixture

HERE = t.Where(guild_id="1290000000000000001", channel_id="1290000000000000010")
DANA = t.Who(user_id="1280000000000000042", user_name="Dana", guild_id=HERE.guild_id, channel_id=HERE.channel_id)
AT = {"platform": "discord", "workspace": HERE.guild_id, "in_channel": HERE.channel_id}  # facts for permissions


def test_council_command_from_a_recorded_interaction() -> None:
    payload = fixture("interaction_council.json")
    who = t.Who(payload["member"]["user"]["id"], payload["member"]["user"]["global_name"],
                t.is_admin(payload["member"]["permissions"]))
    cmd = t.slash_command(payload["data"]["name"], t.options(payload["data"]), who,
                          t.Where(payload["guild_id"], payload["channel_id"]))
    assert cmd == c.StartDiscussion(**AT, topic="Should we move to trunk-based development?",
                                    channel="1290000000000000010", rounds=2,
                                    experts=3, user_id="1280000000000000042", user_name="Dana", clarify=True)


def test_verbs_use_the_thread_they_are_typed_in() -> None:
    assert t.slash_command("council-stop", {"id": None}, DANA, HERE, current="ab12cd34") == c.Stop(**AT,
        discussion_id="ab12cd34", user_id=DANA.user_id, user_name="Dana")
    with pytest.raises(t.NotUnderstood):
        t.slash_command("council-stop", {}, DANA, HERE)
    pause = t.slash_command("council-pause", {"id": " ff00 "}, DANA, HERE, current="ab12cd34")
    assert isinstance(pause, c.Pause) and pause.discussion_id == "ff00"
    assert t.slash_command("council-list", {}, DANA, HERE) == t.ListDiscussions(channel=HERE.channel_id)
    digest = t.slash_command("council-digest", {"cadence": "cron", "cron": "0 9 * * 1"}, DANA, HERE)
    assert isinstance(digest, c.SetDigest) and digest.cron == "0 9 * * 1" and digest.platform == "discord"
    assert t.slash_command("council-synthesize", {}, DANA, HERE, current="ab12") == c.Synthesize(**AT,
        discussion_id="ab12", user_id=DANA.user_id, user_name="Dana")
    assert t.slash_command("council-status", {"id": "ab12"}, DANA, HERE) == t.ShowStatus("ab12")
    assert t.slash_command("council-help", {}, DANA, HERE) == t.ShowHelp()


def test_every_start_option_and_the_default_zone() -> None:
    cmd = t.slash_command("council", {
        "topic": "  Ship  it? ", "rounds": 2, "experts": 5, "confirm": True, "debate": True,
        "roles": "security, finance,", "anonymous": True, "hidden": True, "every": "1D", "next": "tomorrow 09:00",
        "tz": None}, DANA, HERE, default_tz="Europe/Berlin")
    assert isinstance(cmd, c.StartDiscussion)
    assert (cmd.topic, cmd.rounds, cmd.experts, cmd.confirm, cmd.mode, cmd.roles, cmd.anonymous, cmd.hide_results,
            cmd.every, cmd.next_at, cmd.tz) == ("Ship it?", 2, 5, True, "debate", ["security", "finance"], True, True,
                                                "1d", "tomorrow 09:00", "Europe/Berlin")
    assert t.slash_command("council", {"topic": "x", "tz": "Asia/Tokyo"}, DANA, HERE,
                           default_tz="Europe/Berlin").tz == "Asia/Tokyo"  # type: ignore[union-attr]
    for bad in ({"topic": "x", "tz": "Mars/Olympus"}, {"topic": "x", "every": "sometimes"}, {"topic": "   "}):
        with pytest.raises(t.NotUnderstood):
            t.slash_command("council", bad, DANA, HERE)
    sched = t.slash_command("council-schedule", {"id": "ab12", "when": "monday 10:00", "tz": "Asia/Tokyo"},
                            DANA, HERE)
    assert sched == c.ScheduleRound(**AT, discussion_id="ab12", when="monday 10:00", tz="Asia/Tokyo",
                                    user_id=DANA.user_id, user_name="Dana")
    with pytest.raises(t.NotUnderstood, match="When"):
        t.slash_command("council-schedule", {"id": "ab12"}, DANA, HERE)


def test_autocomplete_choices_fit_discord() -> None:
    assert t.zone_choices("berl")[0] == "Europe/Berlin"
    assert all("york" in z.lower() for z in t.zone_choices("york")) and t.zone_choices("york")
    assert len(t.zone_choices("a")) == 25
    assert t.suggestion_choices("tom", t.NEXT_SUGGESTIONS) == ["tom", "tomorrow 09:00", "tomorrow morning"]
    assert t.suggestion_choices("", t.EVERY_SUGGESTIONS) == list(t.EVERY_SUGGESTIONS)


def test_buttons_from_a_recorded_click() -> None:
    payload = fixture("interaction_button.json")
    action, value = t.parse_custom_id(payload["data"]["custom_id"]) or ("", "")
    assert t.component(action, value, DANA) == c.CastBallot(**AT, poll_id=7, choice=1, user_id=DANA.user_id,
                                                            user_name="Dana")
    assert t.component("next:deep_dive", "ab12|deep_dive", DANA) == c.ChooseNextAction(**AT,
        discussion_id="ab12", action=NextAction.DEEP_DIVE, user_id=DANA.user_id, user_name="Dana")
    assert isinstance(t.component("sched:1h", "ab12|in 1 hour", DANA), c.ScheduleRound)
    assert t.component("roster:modify", "ab12", DANA) == t.OpenModal("modify", "ab12")
    assert t.component("reply", "ab12", DANA) == t.OpenModal("reply", "ab12")
    assert isinstance(t.component("fail:retry", "ab12", DANA), c.RetryTurns)
    with pytest.raises(t.NotUnderstood):
        t.component("next:fly", "ab12|fly", DANA)


def test_custom_ids_round_trip_and_stay_short() -> None:
    for action, value in [("vote:3", "12|3"), ("sched:tomorrow", "ab12cd34|tomorrow morning"), ("reply", "x")]:
        assert t.parse_custom_id(t.custom_id(action, value)) == (action, value)
    with pytest.raises(ValueError):
        t.custom_id("next:deep_dive", "x" * 100)
    assert t.parse_custom_id("someone-elses-button") is None


def test_modal_submission_from_a_recorded_payload() -> None:
    payload = fixture("interaction_modal_submit.json")
    cmd = t.modal(payload["data"], DANA, payload["id"])
    assert cmd == c.PostHumanMessage(**AT, discussion_id="ab12cd34", text="What about release trains?",
                                     event_id=f"discord:interaction:{payload['id']}", user_id=DANA.user_id,
                                     user_name="Dana")


def test_roster_edits_rename_remove_or_add() -> None:
    people = [Persona(key="amara", name="Amara Okafor", role=Role.EXPERT)]
    edit = t.RosterEdit("ab12", "amara okafor", "Amara O.", "", False)
    assert t.roster_command(edit, people, DANA) == c.ModifyRoster(**AT,
        discussion_id="ab12", persona_key="amara", name="Amara O.", title="", remove=False,
        user_id=DANA.user_id, user_name="Dana")
    for named in ("Amara Okafor", "AMARA"):  # by name or by key, any case
        removed = t.roster_command(t.RosterEdit("ab12", named, "", "", True), people, DANA)
        assert removed == c.ModifyRoster(**AT, discussion_id="ab12", persona_key="amara", name="", title="",
                                         remove=True,
                                         user_id=DANA.user_id, user_name="Dana"), named
    added = t.roster_command(t.RosterEdit("ab12", "Grace Hopper", "", "Compilers", False), people, DANA)
    assert added == c.AddExpert(**AT, discussion_id="ab12", name="Grace Hopper", title="Compilers",
                                user_id=DANA.user_id, user_name="Dana")
    with pytest.raises(t.NotUnderstood):
        t.roster_command(t.RosterEdit("ab12", "Nobody", "", "", True), people, DANA)


def test_a_recorded_thread_reply_drops_the_bot_mention() -> None:
    payload = fixture("message_create_reply.json")
    bot_id = payload["mentions"][0]["id"]
    cmd = t.human_message(payload["content"], payload["id"], bot_id, DANA, "ab12cd34")
    assert cmd is not None and cmd.text == "What about release trains?"
    assert cmd.event_id == f"discord:{payload['id']}"
    assert t.human_message(f"<@!{bot_id}>  ", "1", bot_id, DANA, "ab12cd34") is None


def test_admin_bits() -> None:
    assert t.is_admin(str(1 << 3)) and t.is_admin(1 << 5)
    assert not t.is_admin("1071698660929")  # @everyone's default permissions
    assert not t.is_admin("2048") and not t.is_admin(None) and not t.is_admin("junk")


def test_flow_style_tier_language_and_hints_options() -> None:
    cmd = t.slash_command("council", {"topic": "Ship it?", "flow": "council", "style": "sequential", "tier": "heavy",
                                      "lang": "Japanese", "hints": "cost, speed"}, DANA, HERE)
    assert isinstance(cmd, c.StartDiscussion)
    assert (cmd.flow, cmd.style, cmd.tier, cmd.lang, cmd.hints) == ("council", "sequential", "heavy", "Japanese",
                                                                    ["cost", "speed"])
    with pytest.raises(t.NotUnderstood, match="`lang` takes a language name"):
        t.slash_command("council", {"topic": "x", "lang": "<script>"}, DANA, HERE)
    assert "◦ `meeting` — " in t.HELP


def test_models_are_carried_to_the_start_as_typed() -> None:
    cmd = t.slash_command("council", {"topic": "Ship it?", "models": "openai:gpt-5.1 anthropic:claude-sonnet-5-5"},
                          DANA, HERE)
    assert isinstance(cmd, c.StartDiscussion) and cmd.models == "openai:gpt-5.1 anthropic:claude-sonnet-5-5"
    plain = t.slash_command("council", {"topic": "Ship it?"}, DANA, HERE)
    assert isinstance(plain, c.StartDiscussion) and plain.models == ""
