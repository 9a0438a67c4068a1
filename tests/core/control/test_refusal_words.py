"""Each moderating command's refusal as people read it ("Only Dana or a workspace admin can stop this discussion."),
and who may steer and configure when the operator set nothing. The sentences are the spec: written here, not read
from the module, so a verb dropped or misspelt fails its own case."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from core.control import commands as c
from core.control import permissions as perm
from core.models import Discussion, NextAction

NOW = datetime(2026, 3, 2, tzinfo=UTC)
D = Discussion(id="d1", topic="t", platform="slack", workspace="T1", channel="C1", created_by="U1",
               created_by_name="Dana", created_at=NOW, updated_at=NOW)
MEMBER = {"user_id": "U2", "platform": "slack", "workspace": "T1", "in_channel": "C1"}

REFUSALS = [
    (c.ConfirmRoster(discussion_id="d1", **MEMBER), "start"),
    (c.ModifyRoster(discussion_id="d1", persona_key="p", **MEMBER), "edit the roster of"),
    (c.AddExpert(discussion_id="d1", name="Ann", title="Economist", **MEMBER), "edit the roster of"),
    (c.Synthesize(discussion_id="d1", **MEMBER), "ask for the final synthesis of"),
    (c.Pause(discussion_id="d1", **MEMBER), "pause"),
    (c.Resume(discussion_id="d1", **MEMBER), "resume"),
    (c.Stop(discussion_id="d1", **MEMBER), "stop"),
    (c.RetryTurns(discussion_id="d1", **MEMBER), "retry turns in"),
    (c.SkipTurns(discussion_id="d1", **MEMBER), "skip turns in"),
    (c.ScheduleRound(discussion_id="d1", **MEMBER), "schedule rounds of"),
    (c.ClosePoll(poll_id=1, **MEMBER), "close a poll in"),
    (c.RevokeLinks(discussion_id="d1", **MEMBER), "revoke the page links of"),
]


@pytest.mark.parametrize(("cmd", "verb"), REFUSALS, ids=[type(cmd).__name__ for cmd, _ in REFUSALS])
def test_each_moderating_command_is_refused_to_a_member_by_its_own_verb(cmd: c.Command, verb: str) -> None:
    with pytest.raises(perm.Refused) as refused:
        perm.check(perm.Policy(), D, cmd)
    assert str(refused.value) == f"Only Dana or a workspace admin can {verb} this discussion."
    perm.check(perm.Policy(), D, cmd.model_copy(update={"user_id": "U1"}))  # the starter may


def test_members_steer_unless_the_operator_says_otherwise() -> None:
    steer = c.ChooseNextAction(discussion_id="d1", action=NextAction.ANOTHER_ROUND, **MEMBER)
    perm.check(perm.Policy(), D, steer)
    with pytest.raises(perm.Refused):
        perm.check(perm.Policy(members_steer=False), D, steer)


def test_only_admins_configure_a_channel_unless_the_operator_says_members_may() -> None:
    member = c.Command(**MEMBER)
    with pytest.raises(perm.Refused) as refused:
        perm.check_configure(perm.Policy(), member, "C1")
    assert str(refused.value) == "Only workspace admins can configure this channel."
    perm.check_configure(perm.Policy(members_configure=True), member, "C1")
