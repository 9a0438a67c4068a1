"""Structured-output shapes the LLM fills in: rosters, round and final syntheses (seed 000 formats)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class ExpertSpec(BaseModel):
    name: str = Field(description="A person's full name, distinct culture per expert")
    title: str = Field(description="Short role line, e.g. 'Database reliability engineer'")
    expertise: list[str]
    thinking_style: str
    bias: str
    reply_tendency: str


# What every question turn asks for: the answers people and personas choose between, worded as actions.
ANSWERS = ("The answers the topic asks to choose between, 2 to 5, each a distinct action in a few words: a yes/no "
           "question's two answers (for 'Should we move to trunk-based development?': 'Adopt trunk-based "
           "development', 'Keep release branches'), an either/or question's alternatives ('Use Postgres', 'Use "
           "MySQL'), an open question's main candidate answers")


class RosterSpec(BaseModel):
    experts: list[ExpertSpec]
    options: list[str] = Field(default_factory=list, description=ANSWERS)


class Question(BaseModel):
    """The question a topic asks and its answers: the first options every stance and every vote names."""

    question: str = Field(description="The decision the topic asks for, as one short question")
    options: list[str] = Field(description=ANSWERS)


class RoundSynthesis(BaseModel):
    summary: str
    agreements: list[str]
    disagreements: list[str]
    insights: list[str]
    open_questions: list[str]
    next_topic_suggestions: list[str]
    reads: Literal["CONSENSUS", "LEANING", "SPLIT", "NO VERDICT"] = Field(
        default="NO VERDICT", description="The kind of the computed verdict you were given, which your summary "
                                          "agrees with")
    # Who backs which proposal is each persona's own recorded stance (an id), never the synthesis's to say.
    proposals: list[str] = Field(description="2-4 concrete proposals the group could vote on")


class Insight(BaseModel):
    title: str
    description: str
    confidence: Literal["high", "medium", "low"]
    supporting_evidence: list[str]
    dissenting_views: list[str]


class Agreement(BaseModel):
    point: str
    supporters: list[str]


class Stance(BaseModel):
    stance: str
    advocates: list[str]
    arguments: list[str]


class Debate(BaseModel):
    topic: str
    positions: list[Stance]


class FinalSynthesis(BaseModel):
    executive_summary: str
    insights: list[Insight]
    agreements: list[Agreement]
    unresolved_debates: list[Debate]
    open_questions: list[str]
    recommendations: list[str]
    reads: Literal["CONSENSUS", "LEANING", "SPLIT", "NO VERDICT"] = Field(
        default="NO VERDICT", description="The kind of the computed verdict you were given, which your summary "
                                          "agrees with")


class DigestItem(BaseModel):
    """One line of a digest, with the discussion it comes from as data: the digest names and links it."""

    discussion: int = Field(ge=1, description="The number of the discussion it comes from: its <discussion> "
                                              "tag's `number`")
    text: str = Field(description="Under 30 words, without the discussion's topic (the digest adds it)")


class DigestSummary(BaseModel):
    decided: list[DigestItem]
    dissent: list[DigestItem]
    open_questions: list[DigestItem]


class Speech(BaseModel):
    """A persona's turn with its stance, recorded in the same call (no extra model call)."""

    text: str = Field(description="What you say in the thread, within your word budget")
    stance: str = Field(description="Your position right now, in one line of at most 20 words")
    label: str = Field(description="Exactly one of: the id of the option you support (such as O2), "
                                   "`new: <a new option in at most five words>`, or undecided (for or against "
                                   "only while no option is listed); in English whatever language you write in")


class AdvisorPerspective(BaseModel):
    advisor: str = Field(description="Advisor name exactly as in the roster")
    position: str = Field(description="Their final position in one or two sentences")
    evolution: str = Field(description="How their position moved across the rounds, or that it held")


class CouncilVerdict(BaseModel):
    verdict: str = Field(description="The referee's verdict in two to four sentences")
    perspectives: list[AdvisorPerspective]
    agreements: list[str]
    tensions: list[str] = Field(description="Where the advisors still disagree, naming them")
    recommendation: str = Field(description="What to do, in two or three sentences")
    next_steps: list[str]
    reads: Literal["CONSENSUS", "LEANING", "SPLIT", "NO VERDICT"] = Field(
        default="NO VERDICT", description="The kind of the computed verdict you were given, which your reading "
                                          "agrees with")
    recommends: str = Field(default="none", description=(
        "The id of the option you recommend, exactly as listed (such as O2, or for / against where no list "
        "exists), or none"))


class RankedItem(BaseModel):
    item: str = Field(description="The option's id from the list on the table, such as O2")
    why: str = Field(description="One line on why it sits at this place")
    domain: str = Field(default="", description="The domain this item affects most")


class RankedVote(BaseModel):
    """A domain owner's final vote: their priority order, top 3 to 5."""

    ranking: list[RankedItem] = Field(description="3 to 5 items, most important first")
    stance: str = Field(description="Your position in one line")
    label: str = Field(description="Your first choice: the same id as ranking[0].item")


class MeetingOptions(BaseModel):
    """The options the moderator fixes before the final vote: the owners rank from this list."""

    options: list[str] = Field(description="3 to 6 distinct options, each in a few words, as argued in the meeting")


class MeetingRecommendation(BaseModel):
    key_arguments: list[str] = Field(description="The 2-3 strongest arguments made, attributed")
    dissents: list[str] = Field(description="Notable disagreements with the ranking, naming who holds them")
    next_steps: list[str] = Field(description="2-3 actionable next steps; nothing is executed automatically")


class Slot(BaseModel):
    brief: str = Field(description="1-2 sentences: this participant's background, e.g. '20-year veteran regulator'")
    name_culture: str = Field(description="The culture their name comes from; no two participants share one")
    position: str = Field(description="The position they start from on the topic")
    tone: str = Field(description="How they speak: e.g. blunt, wry, patient, formal")


class FloorPlan(BaseModel):
    """The open floor's composition: one slot per participant."""

    slots: list[Slot]
    options: list[str] = Field(default_factory=list, description=ANSWERS)


class Bid(BaseModel):
    """A participant asks for the floor."""

    urgency: int = Field(ge=1, le=10, description="How much you need to speak now: 1 (nothing new) to 10 (crucial)")
    point: str = Field(description="The point you would make, in one line")
    answers: str = Field(default="", description="Whom you would answer, by name, or empty")


class FloorSpeech(BaseModel):
    text: str = Field(description="What you say, within your word budget")
    stance: str = Field(description="Your position right now, in one line of at most 20 words")
    label: str = Field(description="Exactly one of: the id of the option you support (such as O2), "
                                   "`new: <a new option in at most five words>`, or undecided (for or against "
                                   "only while no option is listed); in English whatever language you write in")
    builds_on_earlier: bool = Field(description="True if you build on or answer positions already stated")
    proposes_synthesis: bool = Field(description="True if you explicitly propose a synthesis or convergence point")
    open_question: str = Field(default="", description="A question you put to someone that awaits an answer, or empty")


class PeerReview(BaseModel):
    """One persona's ranking of the others' statements, each named by the letter it was shown under."""

    ranking: list[str] = Field(description="Every statement's letter, the strongest argument first, each once")
    strongest: str = Field(description="The letter of the statement whose argument is strongest")
    why: str = Field(description="Why that argument is the strongest, in one or two sentences, without guessing "
                                 "who wrote it")
