"""What the driver and its parts are configured with: this process's name, the lease's life, budgets and waits."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from core.running.spending import Limits
from core.showing.pages import PageLinks

SEND_LANDS_S = 3.0  # a post another process began sending (its lease lapsed mid-send) lands within this, or never


@dataclass
class DriverConfig:
    owner: str  # this process; written into leases
    lease_ttl: float = 60.0
    limits: Limits = field(default_factory=Limits)  # the workspace's daily budget
    context_rounds: int = 2  # rounds a prompt reads verbatim (COUNCIL_CONTEXT_ROUNDS)
    live_interval_s: float = 1.0  # a persona's post grows as the model writes, at most this often
    pages: PageLinks = field(default_factory=PageLinks)  # signed links to discussion pages ("" when not set up)
    # A turn's words so far are kept for its page at most this often (every replica serving the page reads them):
    # as often as an open page asks, no more.
    page_interval_s: float = 3.0
    seat_wait_s: float = 30 * 60.0  # how long a person's turn waits for them (COUNCIL_SEAT_WAIT_MIN)
    admit_per_pass: int = 2  # discussions starting a stretch of work in one pass of the event loop (admission)
    # How long a post another process began sending may still be on its way to the platform: a post tried before
    # is looked up only after this, so the lookup sees it (0: no other live process uses this database, as the
    # sole process of an SQLite file knows).
    send_lands_s: float = SEND_LANDS_S
    # The heartbeat's wait between renewals (tests step it one beat at a time instead of waiting real time).
    beat_wait: Callable[[float], Awaitable[None]] = asyncio.sleep
