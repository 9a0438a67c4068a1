"""Who may do what (pure): every branch of the rules, decided from the facts an adapter reports."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from core.control import commands as c
from core.control import permissions as perm
from core.models import Discussion, NextAction, Schedule

T0 = datetime(2026, 3, 2, tzinfo=UTC)
D = Discussion(id="d1", topic="t", platform="slack", workspace="T1", channel="C1", created_by="U1",
               created_by_name="Dana", created_at=T0, updated_at=T0)
POLICY = perm.Policy(admins=frozenset({"U9", "S0ADMINS"}))
HERE = {"platform": "slack", "workspace": "T1", "in_channel": "C1"}


def cmd(**kw: object) -> c.Command:
    return c.Command(**{**HERE, **kw})  # type: ignore[arg-type]


def test_admins_are_the_platforms_and_the_ones_named() -> None:
    assert perm.is_admin(POLICY, cmd(user_id="U2", is_admin=True))
    assert perm.is_admin(POLICY, cmd(user_id="U9"))
    assert perm.is_admin(POLICY, cmd(user_id="U2", groups=["S1", "S0ADMINS"]))
    assert not perm.is_admin(POLICY, cmd(user_id="U2", groups=["S1"]))
    assert not perm.is_admin(perm.Policy(), cmd(user_id=""))


def test_a_discussion_is_seen_from_its_channel_in_its_workspace_and_platform() -> None:
    assert perm.visible(POLICY, D, cmd(user_id="U2"))
    assert not perm.visible(POLICY, D, cmd(user_id="U2", in_channel="C2"))
    assert perm.visible(POLICY, D, cmd(user_id="U9", in_channel="C2"))  # an admin, from elsewhere
    assert not perm.visible(POLICY, D, cmd(user_id="U9", workspace="T2"))
    assert not perm.visible(POLICY, D, cmd(user_id="U9", platform="discord"))
    assert perm.visible(POLICY, D.model_copy(update={"channel": ""}), cmd(user_id="U2", in_channel="C7"))


def test_from_a_direct_message_only_the_starter_finds_it() -> None:
    dm = {"in_dm": True, "in_channel": "D1"}
    assert perm.visible(POLICY, D, cmd(user_id="U1", **dm))
    assert perm.visible(POLICY, D, cmd(user_id="U1", workspace="", **dm))  # Discord sends no guild in a DM
    assert not perm.visible(POLICY, D, cmd(user_id="U1", workspace="T2", **dm))
    assert not perm.visible(POLICY, D, cmd(user_id="U1", platform="discord", **dm))
    assert not perm.visible(POLICY, D, cmd(user_id="U2", **dm))
    assert not perm.visible(POLICY, D.model_copy(update={"created_by": ""}), cmd(user_id="", **dm))


def test_each_command_is_an_act_with_a_verb() -> None:
    steer = c.ChooseNextAction(discussion_id="d1", action=NextAction.DEEP_DIVE)
    assert perm.act_of(steer) == perm.Act.STEER and perm.verb_of(steer) == "choose the next round of"
    pause = c.ChooseNextAction(discussion_id="d1", action=NextAction.PAUSE)
    assert perm.act_of(pause) == perm.Act.MODERATE and perm.verb_of(pause) == "pause"
    final = c.ChooseNextAction(discussion_id="d1", action=NextAction.SYNTHESIZE)
    assert perm.verb_of(final) == "ask for the final synthesis of"
    stop = c.Stop(discussion_id="d1")
    assert perm.act_of(stop) == perm.Act.MODERATE and perm.verb_of(stop) == "stop"
    assert perm.act_of(c.CastBallot(poll_id=1, choice=0)) == perm.Act.TAKE_PART
    assert perm.verb_of(c.CastBallot(poll_id=1, choice=0)) == "change"


def test_moderating_is_for_the_starter_by_id_and_admins() -> None:
    stop = {"discussion_id": "d1"}
    perm.check(POLICY, D, c.Stop(**stop, user_id="U1", **HERE))
    perm.check(POLICY, D, c.Stop(**stop, user_id="U2", is_admin=True, **HERE))
    with pytest.raises(perm.Refused, match=r"^Only Dana or a workspace admin can stop this discussion\.$"):
        perm.check(POLICY, D, c.Stop(**stop, user_id="U2", user_name="Dana", **HERE))
    with pytest.raises(perm.Refused, match="Only the person who started it or a workspace admin"):
        perm.check(POLICY, D.model_copy(update={"created_by_name": ""}), c.Stop(**stop, user_id="U2", **HERE))
    with pytest.raises(perm.Refused):  # no id is nobody, even when the discussion has no starter either
        perm.check(POLICY, D.model_copy(update={"created_by": ""}), c.Stop(**stop, user_id="", **HERE))
    perm.check(POLICY, D, c.CastBallot(poll_id=1, choice=0, user_id="U2", **HERE))


def test_steering_is_for_members_unless_the_workspace_keeps_it_for_moderators() -> None:
    steer = c.ChooseNextAction(discussion_id="d1", action=NextAction.ANOTHER_ROUND, user_id="U2", **HERE)  # type: ignore[arg-type]
    perm.check(POLICY, D, steer)
    with pytest.raises(perm.Refused, match="choose the next round of"):
        perm.check(perm.Policy(members_steer=False), D, steer)


def digest(**kw: object) -> c.SetDigest:
    return c.SetDigest(**{"platform": "slack", "workspace": "T1", "channel": "C1", "in_channel": "C1",
                          "user_id": "U2", "cadence": "daily", **kw})  # type: ignore[arg-type]


def schedule(created_by: str = "U1", enabled: bool = True) -> Schedule:
    return Schedule(kind="digest", target="C1", platform="slack", workspace="T1", trigger="cron:0 9 * * *",
                    created_by=created_by, enabled=enabled, next_run_at=T0)


def test_digest_rules() -> None:
    perm.check_digest(POLICY, digest(), None)
    perm.check_digest(POLICY, digest(), schedule("U2"))  # one's own
    perm.check_digest(POLICY, digest(), schedule("U1", enabled=False))  # an old one that is off
    perm.check_digest(POLICY, digest(cadence="off"), None)
    with pytest.raises(perm.Refused, match=r"can replace it\.$"):
        perm.check_digest(POLICY, digest(), schedule("U1"))
    with pytest.raises(perm.Refused, match=r"can turn it off\.$"):
        perm.check_digest(POLICY, digest(cadence="off"), schedule("U1"))
    with pytest.raises(perm.Refused) as elsewhere:
        perm.check_digest(POLICY, digest(in_channel="C2"), None)
    assert str(elsewhere.value) == ("You can set a digest for the channel you are in; for another channel, ask a "
                                    "workspace admin.")
    perm.check_digest(POLICY, digest(cadence="off", in_channel="C2"), None)
    with pytest.raises(perm.Refused) as often:
        perm.check_digest(POLICY, digest(cadence="cron", cron="*/30 * * * *"), None)
    assert str(often.value) == ("A digest may post at most one an hour (one minute in the cron's first field, e.g. "
                                "`15 * * * *`); for more often, ask a workspace admin.")
    perm.check_digest(POLICY, digest(cadence="cron", cron="5 * * * *"), None)
    perm.check_digest(POLICY, digest(cadence="daily", cron="* * * * *"), None)  # the cron of a daily is not read
    perm.check_digest(POLICY, digest(user_id="U9", cadence="cron", cron="* * * * *", in_channel="C2"),
                      schedule("U1"))


def test_a_cron_fires_at_most_hourly_when_its_minute_field_names_one_minute() -> None:
    assert perm.hourly_at_most("0 * * * *") and perm.hourly_at_most("@daily") and perm.hourly_at_most("59 */2 * * *")
    assert not perm.hourly_at_most("0,30 * * * *") and not perm.hourly_at_most("*/59 * * * *")
    assert perm.hourly_at_most("not cron")  # setting it says what is wrong


def test_configuring_a_channel() -> None:
    perm.check_configure(POLICY, cmd(user_id="U9"), "C1")
    perm.check_configure(POLICY, cmd(user_id="U9", in_channel="C2"), "C1")
    with pytest.raises(perm.Refused, match=r"^Only workspace admins can configure this channel\.$"):
        perm.check_configure(POLICY, cmd(user_id="U2"), "C1")
    members = perm.Policy(members_configure=True)
    perm.check_configure(members, cmd(user_id="U2"), "C1")
    with pytest.raises(perm.Refused) as elsewhere:
        perm.check_configure(members, cmd(user_id="U2", in_channel="C2"), "C1")
    assert str(elsewhere.value) == ("You can configure the channel you are in; for another channel, ask a workspace "
                                    "admin.")


def test_admin_only_views_say_what_was_refused() -> None:
    perm.check_admin(POLICY, cmd(user_id="U9"), "see usage")
    with pytest.raises(perm.Refused, match=r"^Only workspace admins can see usage\.$"):
        perm.check_admin(POLICY, cmd(user_id="U2"), "see usage")
