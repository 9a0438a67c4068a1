"""Time markers from the core, as each platform documents its own time syntax."""

from __future__ import annotations

from datetime import UTC, datetime

from adapters.discord.render import emojize, timestamp
from adapters.slack.markup import date_token, mrkdwn
from core.showing.moments import Moment, mark, plain

# 2026-03-02 08:00 UTC is 1772438400 Unix seconds: 09:00 in Berlin (CET, UTC+1), 03:00 in New York (EST).
AT = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)


def test_slack_shows_a_date_token_with_the_time_in_the_schedules_zone_as_fallback() -> None:
    # <!date^timestamp^token_string|fallback_text>, per Slack's "Formatting dates" reference.
    assert date_token(Moment(1772438400, "Europe/Berlin")) == \
        "<!date^1772438400^{date_short_pretty} {time}|Mon 2 Mar 09:00 (Europe/Berlin)>"


def test_slack_mrkdwn_keeps_the_token_whole_around_emphasis_and_escaping() -> None:
    text = f"**Next** <round> at {mark(AT, 'America/New_York')} for __all__ & more"
    assert mrkdwn(text) == ("*Next* &lt;round&gt; at <!date^1772438400^{date_short_pretty} {time}|"
                            "Mon 2 Mar 03:00 (America/New_York)> for *all* &amp; more")


def test_discord_shows_full_timestamps_and_relative_ones_where_asked() -> None:
    # <t:unix:F> is "Tuesday, 20 April 2021 16:20" in the reader's zone; <t:unix:R> is "in 2 hours".
    assert timestamp(Moment(1772438400, "Europe/Berlin")) == "<t:1772438400:F>"
    assert emojize(f":bulb: {mark(AT, 'Europe/Berlin', relative=True)}") == \
        "💡 <t:1772438400:F> (<t:1772438400:R>)"


def test_the_console_names_the_zone() -> None:
    assert plain(f"from {mark(AT, 'Europe/Berlin')} to {mark(AT, '')}") == \
        "from Mon 2 Mar 09:00 (Europe/Berlin) to Mon 2 Mar 08:00 (UTC)"
