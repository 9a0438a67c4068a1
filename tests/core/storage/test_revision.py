"""A discussion's revision: what tells the driver holding its lease that its copy of the state is still whole."""

from __future__ import annotations

from core.models import Phase, Turn, TurnStatus
from core.storage.store import Store
from tests.core.storage.test_store import T0, discussion


async def fenced_revision(s: Store, owner: str = "me") -> int | None:
    async with s.tx() as tx:
        assert await tx.fence("d1", owner, T0) is not None
        return tx.revision_at_fence


async def test_a_change_made_without_the_lease_counts_up_the_revision_and_one_made_under_it_does_not(
        store: Store) -> None:
    async with store.tx() as tx:
        await tx.add_discussion(discussion())
        assert await tx.acquire_lease("d1", "me", T0, ttl=600)
    first = await fenced_revision(store)
    async with store.tx() as tx:  # the lease holder locks the row to save it: its own change
        assert await tx.fence("d1", "me", T0) is not None
        assert await tx.discussion("d1", for_update=True) is not None
    assert await fenced_revision(store) == first
    async with store.tx() as tx:  # a command, a vote or a reply locks it without the lease
        assert await tx.discussion("d1", for_update=True) is not None
    assert await fenced_revision(store) == (first or 0) + 1
    async with store.tx() as tx:  # a plain read changes nothing
        assert await tx.discussion("d1") is not None
    assert await fenced_revision(store) == (first or 0) + 1


async def test_a_transaction_says_which_turns_it_wrote_as_they_are_stored_and_which_it_changed_otherwise(
        store: Store) -> None:
    turn = Turn(key="d1:r1:a", discussion_id="d1", round=1, step=1, phase=Phase.SPEECH, persona_key="a",
                created_at=T0)
    async with store.tx() as tx:
        await tx.add_discussion(discussion())
        assert await tx.start_turns([turn], hold=(0.25, T0)) == {turn.key}
    assert tx.changes.saved[turn.key].status == TurnStatus.RUNNING and tx.changes.held[turn.key] == (0.25, T0)
    async with store.tx() as tx:
        stored = await tx.turn(turn.key)
        assert stored is not None and stored == tx.changes.saved.get(turn.key, stored)
        done = stored.model_copy(update={"status": TurnStatus.DONE, "text": "Said.", "finished_at": T0})
        await tx.save_turn(done)
        await tx.set_turn_status(["d1:r1:b"], TurnStatus.SKIPPED)
    assert tx.changes.saved == {turn.key: done} and tx.changes.held[turn.key] == (0.0, None)
    assert tx.changes.stale == {"d1:r1:b"}
    async with store.tx() as tx:
        assert await tx.turn(turn.key) == done  # the row is what the transaction said it wrote
