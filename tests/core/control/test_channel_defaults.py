"""A channel's defaults for new discussions: set once, applied to every start that does not say otherwise; a bad
field is named and the rest apply."""

from __future__ import annotations

import pytest

from bot.wiring import App
from core.control import commands as c
from core.control import defaults
from core.control.replies import UserError
from tests.core.conftest import discussion, start


def set_defaults(text: str) -> c.SetDefaults:
    return c.SetDefaults(platform="console", channel="C1", in_channel="C1", text=text, user_id="U1",
                         user_name="Dana", is_admin=True)


async def test_a_channels_defaults_shape_every_start_that_does_not_say_otherwise(app: App) -> None:
    reply = await app.service.handle(set_defaults("flow=meeting rounds=3 tier=medium lang=German"))
    assert reply.text.startswith("New discussions in this channel start with flow=meeting rounds=3 tier=medium "
                                 "lang=German")
    d = await discussion(app, (await app.service.handle(start())).discussion_id)
    assert (d.flow, d.auto_rounds, d.options.tier, d.options.lang) == ("meeting", 3, "medium", "German")
    mine = await discussion(app, (await app.service.handle(start(flow="council", rounds=1))).discussion_id)
    assert (mine.flow, mine.auto_rounds, mine.options.lang) == ("council", 1, "German"), "the start's own word wins"
    elsewhere = start().model_copy(update={"channel": "C2", "in_channel": "C2"})
    assert (await discussion(app, (await app.service.handle(elsewhere)).discussion_id)).flow == "moderated"
    await app.service.handle(set_defaults("off"))
    assert (await discussion(app, (await app.service.handle(start())).discussion_id)).flow == "moderated"


async def test_a_bad_field_is_named_and_the_rest_apply(app: App) -> None:
    reply = await app.service.handle(set_defaults("flow=meeting rounds=eleven colour=blue tier=medium"))
    assert "start with flow=meeting tier=medium" in reply.text
    assert "`rounds` takes a whole number from 1 to 10; you wrote `eleven`" in reply.text
    assert "`colour` is not a default I keep" in reply.text
    with pytest.raises(UserError, match="No default set"):
        await app.service.handle(set_defaults("rounds=99"))


def test_parsing_keeps_what_is_valid() -> None:
    values, warnings = defaults.parse("flow=open-floor experts=3 style=debate lang='Brazilian Portuguese' junk")
    assert values == {"flow": "open", "experts": 3, "style": "debate", "lang": "Brazilian Portuguese"}
    assert warnings == ["`junk` is not `field=value` (for example `flow=meeting rounds=3 tier=medium lang=German`)"]


async def test_a_saved_language_of_two_words_stays_two_words(app: App) -> None:
    await app.service.handle(set_defaults('lang="Brazilian Portuguese" rounds=2'))
    d = await discussion(app, (await app.service.handle(start())).discussion_id)
    assert (d.options.lang, d.auto_rounds) == ("Brazilian Portuguese", 2)
