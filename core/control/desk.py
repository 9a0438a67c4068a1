"""What every command family shares: the store, the clock, the service's settings, the discussion the asker may
act on, and a notice in its thread."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.control.guard import ASKER, not_found
from core.control.permissions import Policy, check, visible
from core.models import Discussion, ModelRoutes, Post
from core.ports import Clock
from core.running.spending import Limits
from core.storage.store import Store, Tx


@dataclass(eq=False)  # a collaborator, not a value: compared and hashed by identity
class ServiceConfig:
    budget_usd: float = 5.0
    default_experts: int = 4
    open_max_speeches: int = 16
    fact_check: bool = False  # COUNCIL_FACT_CHECK: discussions check their claims unless started with --no-check
    policy: Policy = field(default_factory=Policy)  # who may do what
    limits: Limits = field(default_factory=Limits)  # daily workspace budget, starts per person
    models: ModelRoutes = field(default_factory=ModelRoutes)  # COUNCIL_MODELS, under a start's and a channel's
    # The providers this deployment has, and the models the price table prices: what --models may name (none:
    # the offline model, which runs every route as itself).
    providers: frozenset[str] = frozenset()
    priced: frozenset[str] = frozenset()


@dataclass(eq=False)  # a collaborator, not a value: compared and hashed by identity
class Desk:
    """The ground each family of handlers stands on; a family is a Desk with the collaborators it adds."""

    store: Store
    clock: Clock
    config: ServiceConfig

    async def get(self, tx: Tx, discussion_id: str) -> Discussion:
        """The discussion, when the person asking (if any) can see it from where they are and may do what they
        asked; otherwise the same "no such discussion" as for an unknown id, or a refusal saying who may."""
        d = await tx.discussion(discussion_id.strip(), for_update=True)
        asker = ASKER.get()
        if d is None or (asker is not None and not visible(self.config.policy, d, asker)):
            raise not_found(discussion_id)
        if asker is not None:
            check(self.config.policy, d, asker)
        return d

    async def notice(self, tx: Tx, d: Discussion, key: str, text: str) -> None:
        """A line in the thread saying what someone did, queued in the caller's transaction."""
        await tx.enqueue(d.id, Post(kind="notice", key=key, text=text), self.clock.now())
