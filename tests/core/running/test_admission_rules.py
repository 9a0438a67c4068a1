"""Admission, rule by rule: a pass starts as many stretches at once as it has room for, no more, and a pass after
the queue emptied has its whole share again."""

from __future__ import annotations

import asyncio

from core.running.admission import Admission
from tests.core.running.test_admission import passes


async def test_a_pass_starts_its_share_of_stretches_at_once_and_the_next_waits() -> None:
    admission = Admission(per_pass=3)
    with passes() as count:
        first = count[0]
        for _ in range(3):
            await admission.turn()
        assert count[0] == first  # three asked in one pass: all three start in it
        await admission.turn()
        assert count[0] > first  # the fourth waits for the next pass


async def test_a_share_under_one_is_one() -> None:
    admission = Admission(per_pass=0)
    with passes() as count:
        first = count[0]
        await admission.turn()
        assert count[0] == first
        await admission.turn()
        assert count[0] > first


async def test_a_quiet_pass_after_the_queue_emptied_has_its_full_share_again() -> None:
    admission = Admission(per_pass=1)
    with passes() as count:
        await admission.turn()
        await admission.turn()  # waits a pass, and takes that pass's one place
        for _ in range(3):
            await asyncio.sleep(0)  # passes go by with nobody asking
        later = count[0]
        await admission.turn()
        assert count[0] == later  # starts at once
