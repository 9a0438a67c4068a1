"""Where a Slack request came from and who sent it, and what the listener glue and its extras share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack import translate as tr
from adapters.slack.clients import Users
from core.control.service import Service
from core.models import Discussion
from core.ports import Clock
from core.running.driver import Driver
from core.storage.store import Store


class CoreApp(Protocol):
    service: Service
    driver: Driver
    store: Store
    clock: Clock


@dataclass
class Place:
    """Where a request came from and who sent it."""

    team: str
    channel: str
    user: str
    user_name: str = ""
    thread_ts: str | None = None
    response_url: str | None = None
    trigger_id: str | None = None
    replace: bool = False  # a button on a private message: the answer takes its place (through response_url)
    dm: bool = False  # from the app's direct message with the person: the discussion named decides where
    # The form the listener opened (loading) for this request, filled in with views.update; "" none opened yet,
    # None: Slack refused to open it (the trigger_id is spent or expired).
    view_id: str | None = ""


def facts(place: Place) -> dict[str, Any]:
    """Where a command comes from, as the core's permission checks need it."""
    return {"platform": tr.PLATFORM, "workspace": place.team, "in_channel": place.channel, "in_dm": place.dm}


class Desk(Protocol):
    """What the beyond-the-thread answers (App Home, forms, exports) use of the listener glue."""

    core: CoreApp
    users: Users
    default_tz: str

    async def tell(self, client: AsyncWebClient, place: Place, text: str) -> None: ...
    async def show(self, client: AsyncWebClient, place: Place, view: dict[str, Any]) -> None: ...
    async def who(self, client: AsyncWebClient, place: Place) -> tuple[tr.Who, str]: ...
    async def discussion(self, discussion_id: str) -> Discussion | None: ...
