"""Domain models of the deliberation: discussions, personas, turns, humans, polls, syntheses, schedules."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field


class Role(StrEnum):
    MODERATOR = "moderator"
    HISTORIAN = "historian"
    CONTRARIAN = "contrarian"
    CROSS_DOMAIN = "cross_domain"
    EXPERT = "expert"  # generated for the topic (moderated experts, open-floor participants)
    ADVISOR = "advisor"  # a council advisor with a fixed lens
    REFEREE = "referee"  # weighs the council's advisors and writes the verdict
    OWNER = "owner"  # a meeting's domain owner
    FACT_CHECKER = "fact_checker"  # checks claims with web search (--check); never seated, never votes


class Status(StrEnum):
    AWAITING_CONFIRMATION = "awaiting_confirmation"  # roster shown, waiting for Start / Modify
    RUNNING = "running"  # the driver has steps to run
    WAITING = "waiting"  # a round ended: waiting for a human to choose the next action
    PAUSED = "paused"  # checkpointed: resume summary written, nothing held
    DONE = "done"  # final synthesis published
    STOPPED = "stopped"  # stopped by a human
    BLOCKED = "blocked"  # repeated LLM failure or budget: needs a human


class Phase(StrEnum):
    """What a turn is for; the order of a moderated round is seed 000's."""

    ROSTER = "roster"
    QUESTION = "question"  # the question a topic asks, and its answers as the first options (any flow)
    OPENING = "opening"
    STATEMENT = "initial_statement"
    COUNTERPOINT = "counterpoint"
    REBUTTAL = "rebuttal"
    ANALOGY = "analogy"
    ROUND_SYNTHESIS = "round_synthesis"
    ANSWER = "answer"
    FINAL_SYNTHESIS = "final_synthesis"
    RESUME_SUMMARY = "resume_summary"
    REOPENING = "reopening"
    DIGEST = "digest"  # a channel digest condensed from stored syntheses (no turn of its own)
    # council
    ADVISOR_OPENING = "advisor_opening"
    ADVISOR_REBUTTAL = "advisor_rebuttal"
    ADVISOR_FINAL = "advisor_final"
    # meeting
    PROPOSAL = "proposal"
    DELIBERATION = "deliberation"
    STEELMAN = "steelman"
    EXCHANGE = "exchange"  # an owner answers another who addressed them by name, in the same round
    OPTIONS = "options"  # the moderator fixes the options the final vote ranks
    RANKED_VOTE = "ranked_vote"
    # open floor
    PERSONA = "persona"  # one participant generated from its slot's brief
    BID = "bid"  # a participant asks for the floor (not posted)
    SPEECH = "speech"
    # any flow, with --check
    FACT_CHECK = "fact_check"  # the Fact-checker reviews claims with the web search tool
    # any flow, with --peer-review
    PEER_REVIEW = "peer_review"  # a persona ranks the others' statements of the round, authors hidden (not posted)


class TurnStatus(StrEnum):
    PLANNED = "planned"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"  # failed, and a human (or the policy) chose to go on without it
    PUBLISHED = "published"


FINISHED_TURN = (TurnStatus.DONE, TurnStatus.PUBLISHED, TurnStatus.SKIPPED)


class NextAction(StrEnum):
    DEEP_DIVE = "deep_dive"
    DIFFERENT_TOPIC = "different_topic"
    ANOTHER_ROUND = "another_round"
    SYNTHESIZE = "synthesize"
    PAUSE = "pause"


NEXT_ACTION_LABELS: dict[NextAction, str] = {
    NextAction.DEEP_DIVE: "Deep dive",
    NextAction.DIFFERENT_TOPIC: "Different topic",
    NextAction.ANOTHER_ROUND: "Another round",
    NextAction.SYNTHESIZE: "Synthesize",
    NextAction.PAUSE: "Pause",
}


class Persona(BaseModel):
    key: str
    name: str
    role: Role
    title: str = ""  # short role line shown in the roster, e.g. "Distributed systems expert"
    expertise: list[str] = Field(default_factory=list)
    thinking_style: str = ""
    bias: str = ""
    reply_tendency: str = ""
    icon: str = ":speech_balloon:"  # emoji shortcode; adapters map it to their platform
    held_by: str = ""  # the platform user id of the person who holds this seat ("": the persona speaks)
    model: str = ""  # "provider:model" its turns run on, as shown (core.deliberation.routes.annotate); "": unsaid


class SeatHolder(BaseModel):
    """A person given a seat: their platform user id, their name, and the seat's title (a domain), if any."""

    user_id: str
    name: str
    title: str = ""


class Decision(BaseModel):
    """What a finished discussion decided, kept to be searched and recalled by later discussions."""

    id: int = 0
    discussion_id: str
    platform: str
    workspace: str = ""
    channel: str = ""
    topic: str
    flow: str
    decided: str  # the recommendation or verdict, in a few sentences
    verdict: str = ""  # the stance count (CONSENSUS / LEANING / SPLIT with the counts)
    stances: list[dict[str, str]] = Field(default_factory=list)  # persona, label, stance
    people: dict[str, int] = Field(default_factory=dict)  # option -> how many people chose it
    link: str = ""  # the thread, where the platform gives a permalink
    decided_at: datetime
    private: bool = False  # decided in a private channel: the record is shown in that channel alone


class ModelRoutes(BaseModel):
    """Which provider and model a discussion's calls run on, each a "provider:model" reference: per tier, dealt
    to the speaking seats in turn, or named for one persona (by its name, lower-cased)."""

    tiers: dict[str, str] = Field(default_factory=dict)
    seats: list[str] = Field(default_factory=list)
    personas: dict[str, str] = Field(default_factory=dict)


class FlowOptions(BaseModel):
    """Settings of a discussion's protocol beyond the moderated defaults."""

    style: Literal["parallel", "sequential", "debate"] = "parallel"  # council: how advisors take turns
    tier: Literal["", "light", "medium", "heavy"] = ""  # which models the seats use; "" is the flow's own default
    lang: str = ""  # the language to speak; "" means the topic's own
    hints: list[str] = Field(default_factory=list)  # open floor: controversy axes to seed the personas with
    max_speeches: int = 16  # open floor: the floor closes after this many speeches at the latest
    owners: list[str] = Field(default_factory=list)  # meeting: "Name: domain" per owner, from the channel
    check: bool = False  # --check: a Fact-checker reviews the claims with web search (core.deliberation.factcheck)
    peer_review: bool = False  # --peer-review: personas rank each other's statements unnamed (core.deliberation.review)
    review_seed: int = 0  # shuffles what each reviewer is shown; kept, so a resumed discussion shows the same order
    people: list[SeatHolder] = Field(default_factory=list)  # people given a seat with --seat
    memory: Literal["channel", "workspace", "off"] = "channel"  # where earlier decisions are looked up
    recalled: list[Decision] = Field(default_factory=list)  # earlier decisions the discussion opened with
    private: bool = False  # its channel is private (the platform said so at the start): so is its record
    # The round whose topic the question on the table asks: *Different topic* opens a new question from its round
    # (core.deliberation.question.open_new). Kept here, in the discussion's JSON column, so it needs no migration.
    question_round: int = 1
    models: ModelRoutes = Field(default_factory=ModelRoutes)  # --models, the channel's, then COUNCIL_MODELS
    links: int = 0  # its page links' key version: raised to revoke every link given out so far
    # How long a poll that outlives the discussion (a final poll, a meeting's ranking) stays open, in hours; 0: it
    # closes with the discussion (nobody is there to vote after it: a terminal's unattended run).
    poll_hours: int = 24


class Discussion(BaseModel):
    id: str
    topic: str
    flow: str = "moderated"
    status: Status = Status.RUNNING
    platform: str = "console"
    workspace: str = ""  # Slack team id / Discord guild id
    channel: str = ""
    thread_ref: str = ""  # platform reference of the header message (the thread anchor)
    created_by: str = ""
    created_by_name: str = ""
    round: int = 1
    round_topic: str = ""
    resume_count: int = 0
    pending: str = ""  # "", "final", "pause", "resume", "resume_round": what the next step must do first
    auto_rounds: int | None = None  # unattended: run this many rounds, then synthesize
    experts: int = 4
    mode: Literal["open", "debate"] = "open"
    roles: list[str] = Field(default_factory=list)  # perspectives the starter asked for
    context: str = ""  # e.g. the Slack thread a discussion was started from
    poll_anonymous: bool = False
    poll_hidden: bool = False  # results hidden until the poll closes
    budget_usd: float = 5.0
    cost_usd: float = 0.0
    costliest_call_usd: float = 0.0  # its costliest model call so far (what each next turn reserves)
    blocked_reason: str = ""
    tz: str = "UTC"
    options: FlowOptions = Field(default_factory=FlowOptions)
    header_shown: str = ""  # the state its header message last showed (core.showing.posts.header_sig)
    created_at: datetime
    updated_at: datetime


class Author(StrEnum):
    """Whose words a turn holds: recorded with the turn, never read back from its text or its speaker's name."""

    PERSONA = "persona"  # the persona's model
    STAND_IN = "stand_in"  # the model, standing in for the person who holds the seat
    PERSON = "person"  # the person who holds the seat, in their own words
    BOT = "bot"  # Council itself (the roster it seated)


class Turn(BaseModel):
    key: str  # deterministic: a re-run after a crash finds it instead of duplicating it
    discussion_id: str
    round: int
    step: int
    phase: Phase
    persona_key: str
    status: TurnStatus = TurnStatus.PLANNED
    text: str = ""
    data: dict[str, Any] | None = None  # structured output (syntheses, rosters)
    error: str = ""
    attempts: int = 0
    reply_to: int | None = None  # human message answered by this turn
    author: Author = Author.PERSONA
    created_at: datetime
    finished_at: datetime | None = None


class HumanMessage(BaseModel):
    id: int = 0
    discussion_id: str
    author_id: str
    author_name: str
    text: str
    event_id: str = ""  # platform event id: dedupes retried deliveries
    addressed_to: str = ""  # persona key when the human named a persona
    needs_answer: bool = False  # arrived between rounds: someone answers it within one turn
    answered: bool = False
    created_at: datetime
    ref: str = ""  # the message on the platform (Slack ts, Discord message id): marked once a turn answers it


class Poll(BaseModel):
    id: int = 0
    key: str  # deterministic, from the synthesis turn that proposed it
    final: bool = False  # on the final synthesis's recommendations: stays open after the discussion ends
    discussion_id: str
    round: int
    question: str
    options: list[str]
    option_ids: list[str] = Field(default_factory=list)  # the id of each option (or for / against): what a vote means
    anonymous: bool = False
    hide_results: bool = False
    closed: bool = False
    message_ref: str = ""
    created_at: datetime
    # When a poll that outlives the discussion closes by itself (None: it closes with its round); a reminder
    # before the deadline reads it too.
    closes_at: datetime | None = None
    reminded_at: datetime | None = None  # when the reminder before its deadline was claimed (sent at most once)


class Ballot(BaseModel):
    poll_id: int
    voter_id: str
    voter_name: str
    choice: int
    is_ai: bool = False
    superseded: bool = False
    created_at: datetime


class Usage(BaseModel):
    model: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    cost_usd: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            model=self.model or other.model,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
        )


class Action(BaseModel):
    """A button under a post; `value` travels back in the platform's payload."""

    id: str
    label: str
    value: str = ""
    style: Literal["primary", "danger", ""] = ""
    confirm: str = ""  # a question the person must confirm first (final, costly or irreversible actions)
    menu: bool = False  # a lesser action, offered in the post's menu (Slack's overflow) rather than as a button


class PollView(BaseModel):
    poll_id: int
    question: str
    options: list[str]
    option_ids: list[str] = Field(default_factory=list)  # each option's id, as the verdict names it
    counts: list[int] | None  # None while results are hidden
    voters: list[list[str]] | None = None  # names per option, unless anonymous
    ai_positions: list[list[str]] = Field(default_factory=list)  # persona names per option
    closed: bool = False
    total: int = 0
    final: bool = False  # offered by the final synthesis: the discussion is over when it appears
    closes_at: datetime | None = None  # when it closes by itself (a final poll's deadline)


class PostFile(BaseModel):
    """A file shown with a post (a chart): its bytes, and words saying what it shows for those who cannot see it."""

    name: str
    data: bytes
    alt: str
    title: str = ""


class Post(BaseModel):
    """What the core asks a platform to show; each adapter renders it natively."""

    # "document": the discussion's living synthesis (a Slack canvas, a synthesis.md on Discord), rewritten in place
    # "reaction": a mark (its text: "answered") on a person's message (`reacts_to`), not a message of its own
    kind: Literal["header", "turn", "notice", "choice", "poll", "synthesis", "error", "document", "reaction"]
    key: str  # idempotency key, attached to the platform message
    replaces: str = ""  # key of an earlier post to edit in place instead of posting anew
    text: str
    title: str = ""
    persona: Persona | None = None
    actions: list[Action] = Field(default_factory=list)
    poll: PollView | None = None
    roster: list[Persona] = Field(default_factory=list)
    offline: bool = False  # written by the offline model: adapters label it
    mentions: list[str] = Field(default_factory=list)  # platform user ids to notify; adapters render them
    page_url: str = ""  # the discussion's web page (signed link), added when the post is sent
    files: list[PostFile] = Field(default_factory=list)  # charts, added when the post is sent (never stored)
    state: str = ""  # a header's line on where the discussion stands (status, round, spend, what it waits for)
    reacts_to: str = ""  # a reaction's target: the platform ref of the person's message it marks
    whisper: bool = False  # told to one person: in the thread where only they see it if the platform can


class Schedule(BaseModel):
    id: int = 0
    kind: Literal["round", "digest"]
    target: str  # discussion id for rounds; channel for digests
    platform: str = "console"
    workspace: str = ""
    trigger: str  # "cron:<expr>" | "every:<seconds>" | "at:<iso>"
    tz: str = "UTC"
    next_run_at: datetime | None
    last_run_at: datetime | None = None
    enabled: bool = True
    created_by: str = ""
