"""Forms open first: a loading view the moment a click asks for one (a trigger_id lasts 3 s and opens one view),
filled in with views.update once the work behind it is done."""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.place import Place
from adapters.slack.views import loading_view

log = logging.getLogger(__name__)


async def loading(client: AsyncWebClient, trigger_id: str | None) -> str | None:
    """Open a loading form at once, in the listener: the work behind it (database reads, earlier clicks) fills it
    in later. Its view id; None when Slack refused it (the trigger_id was spent or had expired)."""
    try:
        resp = await client.views_open(trigger_id=trigger_id or "", view=loading_view())
    except SlackApiError as exc:
        log.warning("could not open a form: %s", exc.response.get("error"))
        return None
    return str((resp.get("view") or {}).get("id") or "")


async def show(client: AsyncWebClient, place: Place, view: dict[str, Any]) -> None:
    """Fill in the form the listener opened (or open one, when there was none to fill)."""
    if place.view_id is None:  # the trigger_id was refused: no form can open for this click any more
        raise RuntimeError("Slack would not open the form")
    if place.view_id:
        await client.views_update(view_id=place.view_id, view=view)
    else:
        await client.views_open(trigger_id=place.trigger_id, view=view)
