"""SQLAlchemy 2.x table definitions: the one schema shared by SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(column_0_label)s",
        "uq": "uq_%(table_name)s_%(column_0_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)


class UtcDateTime(TypeDecorator[datetime]):
    """A timestamp written in UTC. SQLite keeps a datetime as text without its offset, so a moment given in
    another zone (the start of a budget day in Asia/Kolkata) would be compared by its wall-clock digits."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return value.astimezone(UTC) if value is not None and value.tzinfo is not None else value


TS = UtcDateTime()

discussions = Table(
    "discussions",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("topic", Text, nullable=False),
    Column("flow", String(32), nullable=False),
    Column("status", String(32), nullable=False, index=True),
    Column("platform", String(16), nullable=False),
    Column("workspace", String(64), nullable=False, default=""),
    Column("channel", String(64), nullable=False, default="", index=True),
    Column("thread_ref", String(128), nullable=False, default=""),
    Column("created_by", String(64), nullable=False, default=""),
    Column("created_by_name", String(128), nullable=False, default=""),
    Column("round", Integer, nullable=False, default=1),
    Column("round_topic", Text, nullable=False, default=""),
    Column("resume_count", Integer, nullable=False, default=0),
    Column("pending", String(16), nullable=False, default=""),
    Column("auto_rounds", Integer, nullable=True),
    Column("experts", Integer, nullable=False, default=4),
    Column("mode", String(16), nullable=False, default="open"),
    Column("roles", JSON, nullable=False, default=list),
    Column("context", Text, nullable=False, default=""),
    Column("poll_anonymous", Boolean, nullable=False, default=False),
    Column("poll_hidden", Boolean, nullable=False, default=False),
    Column("budget_usd", Float, nullable=False),
    Column("cost_usd", Float, nullable=False, default=0.0),
    # Its costliest model call so far: what each next turn reserves (kept here, so a step reads it with the row).
    Column("costliest_call_usd", Float, nullable=False, server_default="0"),
    Column("blocked_reason", Text, nullable=False, default=""),
    Column("tz", String(64), nullable=False, default="UTC"),
    Column("options", JSON, nullable=False, default=dict),  # FlowOptions: style, tier, language, hints...
    Column("header_shown", String(255), nullable=False, default=""),
    # Counted up by every transaction that locks the row without holding the lease (commands, votes, replies):
    # the driver holding the lease rereads the state only when it moved.
    Column("revision", Integer, nullable=False, server_default="0"),
    Column("created_at", TS, nullable=False, index=True),
    Column("updated_at", TS, nullable=False),
    Column("lease_owner", String(128), nullable=True),
    Column("lease_expires_at", TS, nullable=True),
)

personas = Table(
    "personas",
    metadata,
    Column("discussion_id", String(32), ForeignKey("discussions.id"), primary_key=True),
    Column("key", String(64), primary_key=True),
    Column("position", Integer, nullable=False),
    Column("data", JSON, nullable=False),
)

turns = Table(
    "turns",
    metadata,
    Column("key", String(160), primary_key=True),
    Column("discussion_id", String(32), ForeignKey("discussions.id"), nullable=False),
    Column("round", Integer, nullable=False),
    Column("step", Integer, nullable=False),
    Column("phase", String(32), nullable=False),
    Column("persona_key", String(64), nullable=False),
    Column("status", String(16), nullable=False),
    Column("text", Text, nullable=False, default=""),
    Column("data", JSON, nullable=True),
    Column("error", Text, nullable=False, default=""),
    Column("attempts", Integer, nullable=False, default=0),
    Column("reply_to", Integer, nullable=True),
    Column("author", String(16), nullable=False, default="persona", server_default="persona"),  # models.Author
    Column("created_at", TS, nullable=False),
    Column("finished_at", TS, nullable=True),
    # The estimated cost this turn holds in its workspace's spend while it runs, and the quarter hour it is held
    # in; released when the turn is recorded or set aside (see core.storage.reservations).
    Column("reserved_usd", Float, nullable=False, default=0.0, server_default="0"),
    Column("reserved_at", TS, nullable=True),
    Index("ix_turns_discussion", "discussion_id", "created_at"),
)

# Transactional outbox: a row is written in the same transaction as the state that asks for the post.
outbox = Table(
    "outbox",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("key", String(160), nullable=False, unique=True),
    Column("discussion_id", String(32), ForeignKey("discussions.id"), nullable=False),
    Column("payload", JSON, nullable=False),
    Column("ref", String(128), nullable=False, default=""),
    Column("sent", Boolean, nullable=False, default=False),
    Column("attempts", Integer, nullable=False, default=0),  # >0: a crash may have posted it already
    # A refused post waits (exponential backoff) before the next try; a dead one is tried again only on Retry.
    Column("next_attempt_at", TS, nullable=True),
    Column("last_error", String(300), nullable=False, default="", server_default=""),
    Column("dead", Boolean, nullable=False, default=False, server_default=false()),
    Column("turn_key", String(160), nullable=True),
    Column("created_at", TS, nullable=False),
    Column("sent_at", TS, nullable=True),
    Index("ix_outbox_pending", "discussion_id", "sent", "id"),
    Index("ix_outbox_turn_key", "turn_key"),  # whether a turn's post went out (a turn reads as published)
)

# A turn's message shown while it is written (a placeholder, live text): kept so the process that takes over
# after a crash can remove one its predecessor left half-written instead of leaving it beside the turn's post.
placeholders = Table(
    "placeholders",
    metadata,
    Column("discussion_id", String(32), ForeignKey("discussions.id"), primary_key=True),
    Column("key", String(160), primary_key=True),  # the turn's key
    Column("ref", String(200), nullable=False),
    Column("owner", String(128), nullable=False),  # the process that showed it
    Column("created_at", TS, nullable=False),
)

# A turn's words so far, for the discussion's page (read by every replica serving it): written at most every few
# seconds while the model writes, and read only while the turn runs.
live_texts = Table(
    "live_texts",
    metadata,
    Column("discussion_id", String(32), ForeignKey("discussions.id"), primary_key=True),
    Column("key", String(160), primary_key=True),  # the turn's key
    Column("text", Text, nullable=False),
    Column("updated_at", TS, nullable=False),
)

human_messages = Table(
    "human_messages",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("discussion_id", String(32), ForeignKey("discussions.id"), nullable=False, index=True),
    Column("author_id", String(64), nullable=False),
    Column("author_name", String(128), nullable=False),
    Column("text", Text, nullable=False),
    Column("event_id", String(128), nullable=False, default=""),
    Column("addressed_to", String(64), nullable=False, default=""),
    Column("needs_answer", Boolean, nullable=False, default=False),
    Column("answered", Boolean, nullable=False, default=False),
    Column("created_at", TS, nullable=False),
    Column("ref", String(64), nullable=False, default=""),  # the person's message, marked once it is answered
)

# Platform events already handled (Slack retries deliveries; bolt does not deduplicate).
processed_events = Table(
    "processed_events",
    metadata,
    Column("event_id", String(160), primary_key=True),
    Column("seen_at", TS, nullable=False, index=True),  # pruned after a day (PROCESSED_EVENTS_KEPT)
)

polls = Table(
    "polls",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("key", String(160), nullable=False, unique=True),
    Column("final", Boolean, nullable=False, default=False),
    Column("discussion_id", String(32), ForeignKey("discussions.id"), nullable=False, index=True),
    Column("round", Integer, nullable=False),
    Column("question", Text, nullable=False),
    Column("options", JSON, nullable=False),
    Column("option_ids", JSON, nullable=False, default=list),  # what each option means: an id, for or against
    Column("anonymous", Boolean, nullable=False, default=False),
    Column("hide_results", Boolean, nullable=False, default=False),
    Column("closed", Boolean, nullable=False, default=False),
    Column("message_ref", String(128), nullable=False, default=""),
    Column("created_at", TS, nullable=False),
    Column("closes_at", TS, nullable=True, index=True),  # a final poll's deadline: the timer closes it then
    Column("reminded_at", TS, nullable=True),  # when its reminder was claimed: it goes out once
)

ballots = Table(
    "ballots",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("poll_id", Integer, ForeignKey("polls.id"), nullable=False, index=True),
    Column("voter_id", String(64), nullable=False),
    Column("voter_name", String(128), nullable=False),
    Column("choice", Integer, nullable=False),
    Column("is_ai", Boolean, nullable=False, default=False),
    Column("superseded", Boolean, nullable=False, default=False),
    Column("created_at", TS, nullable=False),
    # One live ballot per voter and poll, whatever races: a double click on a first vote cannot leave two.
    Index("uq_ballots_live", "poll_id", "voter_id", unique=True, postgresql_where=text("NOT superseded"),
          sqlite_where=text("NOT superseded")),
)

syntheses = Table(
    "syntheses",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("turn_key", String(160), nullable=False, unique=True),
    Column("discussion_id", String(32), ForeignKey("discussions.id"), nullable=False, index=True),
    Column("round", Integer, nullable=False),
    Column("kind", String(16), nullable=False),  # round | final | resume
    Column("data", JSON, nullable=True),
    Column("text", Text, nullable=False),
    Column("created_at", TS, nullable=False, index=True),
)

usage = Table(
    "usage",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("discussion_id", String(32), nullable=True, index=True),
    Column("turn_key", String(160), nullable=False),
    Column("model", String(64), nullable=False),
    Column("input_tokens", Integer, nullable=False),
    Column("output_tokens", Integer, nullable=False),
    Column("cache_write_tokens", Integer, nullable=False),
    Column("cache_read_tokens", Integer, nullable=False),
    Column("cost_usd", Float, nullable=False),
    Column("created_at", TS, nullable=False, index=True),
)

# What each workspace's discussions spent, per quarter hour: the daily budget is checked at every step, and a
# sum over the usage rows of the day grew with the workspace's activity. Quarter hours, in UTC: every time
# zone's midnight falls on one, so the budget day of any zone is a whole number of buckets.
spend = Table(
    "spend",
    metadata,
    Column("platform", String(16), primary_key=True),
    Column("workspace", String(64), primary_key=True),
    Column("starts_at", TS, primary_key=True),
    Column("cost_usd", Float, nullable=False),
    Index("ix_spend_starts", "starts_at"),  # the whole process's day (COUNCIL_PROCESS_DAILY_USD), every workspace
)

schedules = Table(
    "schedules",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("kind", String(16), nullable=False),
    Column("target", String(128), nullable=False),
    Column("platform", String(16), nullable=False),
    Column("workspace", String(64), nullable=False, default=""),
    Column("trigger", String(256), nullable=False),
    Column("tz", String(64), nullable=False, default="UTC"),
    Column("next_run_at", TS, nullable=True, index=True),
    Column("last_run_at", TS, nullable=True),
    Column("enabled", Boolean, nullable=False, default=True),
    Column("created_by", String(64), nullable=False, default=""),
    Column("created_at", TS, nullable=False),
    UniqueConstraint("kind", "platform", "workspace", "target", name="uq_schedules_target"),
)

# One row per digest firing (schedule, slot): written when the slot is claimed, marked sent once posted,
# so a digest claimed by a replica that died before posting is sent by another, and never twice.
digests = Table(
    "digests",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("schedule_id", Integer, ForeignKey("schedules.id"), nullable=False),
    Column("slot", TS, nullable=False),
    Column("period_start", TS, nullable=False),
    Column("period_end", TS, nullable=False),
    Column("sent", Boolean, nullable=False, default=False),
    Column("ref", String(128), nullable=False, default=""),
    Column("attempts", Integer, nullable=False, default=0),
    Column("lease_owner", String(128), nullable=True),
    Column("lease_expires_at", TS, nullable=True),
    Column("created_at", TS, nullable=False),
    Column("sent_at", TS, nullable=True),
    # The digest as written (its Post, without chart images), stored before it is first sent: a retry sends
    # these words again instead of asking the model to write them anew.
    Column("post", JSON, nullable=True),
    UniqueConstraint("schedule_id", "slot", name="uq_digests_slot"),
    Index("ix_digests_pending", "sent", "id"),
)

# A channel's defaults for new discussions (`/council config defaults flow=meeting rounds=3`).
channel_defaults = Table(
    "channel_defaults",
    metadata,
    Column("platform", String(16), primary_key=True),
    Column("workspace", String(64), primary_key=True),
    Column("channel", String(64), primary_key=True),
    Column("defaults", JSON, nullable=False, default=dict),
    Column("updated_by", String(64), nullable=False, default=""),
    Column("updated_at", TS, nullable=False),
)

# The tag each new post in a forum carries, chosen with `/council-config tag:` (Discord forums).
channel_tags = Table(
    "channel_tags",
    metadata,
    Column("platform", String(16), primary_key=True),
    Column("workspace", String(64), primary_key=True),
    Column("channel", String(64), primary_key=True),
    Column("tag", String(64), nullable=False),
    Column("updated_by", String(64), nullable=False, default=""),
    Column("updated_at", TS, nullable=False),
)

# What people configured for a channel with `/council config` (the meeting's domain owners).
channel_settings = Table(
    "channel_settings",
    metadata,
    Column("platform", String(16), primary_key=True),
    Column("workspace", String(64), primary_key=True),
    Column("channel", String(64), primary_key=True),
    Column("owners", JSON, nullable=False, default=list),
    Column("updated_by", String(64), nullable=False, default=""),
    Column("updated_at", TS, nullable=False),
)

# The slash commands an application last synced to a platform, by a hash of their definitions: a start with the
# same definitions syncs nothing (the platform limits how often commands may be written).
command_sync = Table(
    "command_sync",
    metadata,
    Column("platform", String(16), primary_key=True),
    Column("application", String(64), primary_key=True),
    Column("digest", String(64), nullable=False),
    Column("synced_at", TS, nullable=False),
)

# What each finished discussion decided. Searched with the database's own full-text index, which the migration
# adds beside it: an FTS5 table kept in step by triggers on SQLite, a generated tsvector column with a GIN index
# on PostgreSQL (neither is declared here: queries reach them through text()).
decisions = Table(
    "decisions",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("discussion_id", String(32), ForeignKey("discussions.id"), nullable=False, unique=True),
    Column("platform", String(16), nullable=False),
    Column("workspace", String(64), nullable=False, default=""),
    Column("channel", String(64), nullable=False, default=""),
    Column("topic", Text, nullable=False),
    Column("flow", String(32), nullable=False),
    Column("decided", Text, nullable=False),
    Column("verdict", Text, nullable=False, default=""),
    Column("stances", JSON, nullable=False, default=list),
    Column("people", JSON, nullable=False, default=dict),
    Column("link", Text, nullable=False, default=""),
    Column("decided_at", TS, nullable=False),
    Column("private", Boolean, nullable=False, default=False, server_default=false()),
    Index("ix_decisions_place", "platform", "workspace", "channel", "decided_at"),
)

# A person's seat turn waiting for them: the deadline is stored (a restart keeps it), never held in a task.
seat_waits = Table(
    "seat_waits",
    metadata,
    Column("turn_key", String(160), primary_key=True),
    Column("discussion_id", String(32), ForeignKey("discussions.id"), nullable=False, index=True),
    Column("persona_key", String(64), nullable=False),
    Column("user_id", String(64), nullable=False),
    Column("asked_at", TS, nullable=False),
    Column("nudge_at", TS, nullable=True),  # None once the nudge went out
    Column("deadline", TS, nullable=False),
    Column("state", String(16), nullable=False, default="waiting"),  # waiting | answered | stand_in | back | done
    Column("answer", Text, nullable=False, default=""),
    Column("stance", String(80), nullable=False, default=""),  # chosen from the stance menu
    Index("ix_seat_waits_due", "state", "deadline"),
)

# Rate budgets shared by every replica: a token bucket per workspace and method, or per channel for new posts.
# Times are the platform's seconds (wall clock × the budget's time scale), not timestamps.
rate_budget = Table(
    "rate_budget",
    metadata,
    Column("key", String(200), primary_key=True),
    Column("tokens", Float, nullable=False),
    Column("at", Float, nullable=False),
    Column("paused_until", Float, nullable=False, default=0.0),
    # A bucket one replica holds is changed in its memory alone, and written back now and then (core/running/budget).
    Column("holder", String(64), nullable=True),
    Column("held_until", Float, nullable=False, default=0.0, server_default="0"),
    Column("wanted", Boolean, nullable=False, default=False, server_default=false()),  # by another replica
    Column("shared_until", Float, nullable=False, default=0.0, server_default="0"),  # held by none until then
    # What the last lease of a batch took, of a bucket held by none: read back by the statement that took it.
    Column("taken", Float, nullable=False, default=0.0, server_default="0"),
)
