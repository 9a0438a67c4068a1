"""Modal views (slack_sdk.models.views): the start form and the roster editor."""

from __future__ import annotations

import json
from typing import Any

from slack_sdk.models.blocks import (
    CheckboxesElement,
    ConversationFilter,
    ConversationSelectElement,
    InputBlock,
    Option,
    PlainTextInputElement,
    PlainTextObject,
    RadioButtonsElement,
    SectionBlock,
    StaticSelectElement,
    UserSelectElement,
)
from slack_sdk.models.blocks.basic_components import MarkdownTextObject
from slack_sdk.models.views import View

from adapters.slack.interactions import OPTION_FLAGS, ROSTER_VIEW, ROUND_CHOICES, START_VIEW, TOPIC_VIEW
from adapters.slack.markup import escape
from core.control import commands as c
from core.models import Persona, Role

FLOW_LABELS = {"moderated": "Moderated rounds (you steer)", "council": "Council: advisors and a referee",
               "meeting": "Meeting: domain owners rank options", "open": "Open floor: personas bid to speak"}
STYLE_LABELS = {"parallel": "Parallel (fastest)", "sequential": "Sequential: each sees the ones before",
                "debate": "Debate: cross-rebuttals, then final positions"}
TIER_LABELS = {"light": "Light: the default model for all", "medium": "Medium: a stronger referee",
               "heavy": "Heavy: the strongest model for all"}
FLAG_LABELS = {"confirm": "Let me review the roster before it starts",
               "anonymous": "Anonymous ballots in polls",
               "check": "Check claims against web sources (Fact-checker)",
               "hidden": "Hide poll results until the poll closes"}


def _opt(value: str, label: str) -> Option:
    return Option(value=value, text=PlainTextObject(text=label))


def _input(block: str, label: str, element: Any, *, optional: bool = False, hint: str = "") -> InputBlock:
    return InputBlock(block_id=block, label=PlainTextObject(text=label), element=element, optional=optional,
                      hint=PlainTextObject(text=hint) if hint else None)


def start_view(private_metadata: str, topic: str = "", *, ask_channel: bool = False) -> dict[str, Any]:
    """The start form; from the Home tab (no channel yet) it asks where the discussion should run."""
    experts = [_opt(str(n), f"{n} experts") for n in range(2, 9)]
    rounds = [_opt(r, "I'll steer after each round" if r == "steer" else f"{r} round{'s' if r != '1' else ''}, "
                   "then a synthesis") for r in ROUND_CHOICES]
    modes = [_opt("open", "Open discussion"), _opt("debate", "Debate: pro and con")]
    flow_opts = [_opt(name, FLOW_LABELS[name]) for name in c.FLOW_NAMES]
    styles = [_opt(s, STYLE_LABELS[s]) for s in STYLE_LABELS]
    tiers = [_opt(t, TIER_LABELS[t]) for t in TIER_LABELS]
    flags = [_opt(f, FLAG_LABELS[f]) for f in OPTION_FLAGS]
    blocks = [
        _input("topic", "Topic", PlainTextInputElement(action_id="value", multiline=True, initial_value=topic or None,
                                                       max_length=c.MAX_TOPIC_CHARS - 1,
                                                       placeholder="Should we move to trunk-based development?")),
        _input("flow", "How they deliberate", StaticSelectElement(action_id="value", options=flow_opts,
                                                                  initial_option=flow_opts[0]),
               hint="Moderated rounds, a council of advisors with a referee, a meeting of domain owners that "
                    "ranks options, or an open floor where personas bid to speak."),
        _input("experts", "Number of participants", StaticSelectElement(action_id="value", options=experts,
                                                                         initial_option=experts[2]),
               hint="Topic experts; the moderator, historian, contrarian and cross-domain thinker always join."),
        _input("mode", "Format", RadioButtonsElement(action_id="value", options=modes, initial_option=modes[0])),
        _input("roles", "Roles to include", PlainTextInputElement(action_id="value", max_length=300,
                                                                  placeholder="security, finance, customer support"),
               optional=True, hint="Comma-separated perspectives the experts should cover."),
        _input("style", "Council style", StaticSelectElement(action_id="value", options=styles,
                                                             initial_option=styles[0]),
               optional=True, hint="For the council flow only."),
        _input("tier", "Council models", StaticSelectElement(action_id="value", options=tiers,
                                                             initial_option=tiers[0]),
               optional=True, hint="For the council flow only."),
        _input("lang", "Language", PlainTextInputElement(action_id="value", max_length=30, placeholder="German"),
               optional=True, hint="Leave empty to use the topic's language."),
        _input("rounds", "Rounds", StaticSelectElement(action_id="value", options=rounds, initial_option=rounds[0])),
        _input("options", "Options", CheckboxesElement(action_id="value", options=flags), optional=True),
    ]
    if ask_channel:
        blocks.insert(0, _input("channel", "Channel", ConversationSelectElement(
            action_id="value", filter=ConversationFilter(include=["public", "private"], exclude_bot_users=True)),
            hint="The discussion runs in a thread there; Council must be able to post in it."))
    view = View(type="modal", callback_id=START_VIEW, title=PlainTextObject(text="Start a council"),
                submit=PlainTextObject(text="Start"), close=PlainTextObject(text="Cancel"),
                private_metadata=private_metadata, blocks=blocks)
    return view.to_dict()


def topic_view(private_metadata: str, deep_dive: bool, suggestion: str) -> dict[str, Any]:
    """Deep dive / Different topic: the suggestion filled in, for the person to keep or replace with their own."""
    label = "Deep dive into" if deep_dive else "Move on to"
    blocks = [_input("topic", label, PlainTextInputElement(action_id="value", multiline=True, max_length=500,
                                                           initial_value=suggestion[:500] or None),
                     hint="Keep the council's suggestion or type your own.")]
    view = View(type="modal", callback_id=TOPIC_VIEW, title=PlainTextObject(text="Deep dive" if deep_dive else
                                                                           "Different topic"),
                submit=PlainTextObject(text="Next round"), close=PlainTextObject(text="Cancel"),
                private_metadata=private_metadata, blocks=blocks)
    return view.to_dict()


def roster_view(discussion_id: str, channel: str, personas: list[Persona]) -> dict[str, Any]:
    experts = [p for p in personas if p.role == Role.EXPERT]
    blocks: list[Any] = [SectionBlock(text=MarkdownTextObject(
        text="Rename experts, change what they bring, remove some (at least two stay), or add one. "
             "The moderator, historian, contrarian and cross-domain thinker always take part."))]
    for p in experts:
        blocks.append(_input(f"name:{p.key}", f"{p.name}: name", PlainTextInputElement(
            action_id="value", initial_value=p.name, max_length=80)))
        blocks.append(_input(f"title:{p.key}", f"{p.name}: expertise", PlainTextInputElement(
            action_id="value", initial_value=p.title or None, max_length=120), optional=True))
        blocks.append(_input(f"seat:{p.key}", f"{p.name}: a person takes this seat", UserSelectElement(
            action_id="value", initial_user=p.held_by or None, placeholder="Nobody: the persona speaks"),
            optional=True))
    if experts:
        blocks.append(_input("remove", "Remove", CheckboxesElement(
            action_id="value", options=[_opt(p.key, escape(p.name)[:75]) for p in experts]), optional=True))
    blocks.append(_input("add_name", "Add an expert: name", PlainTextInputElement(action_id="value", max_length=80),
                         optional=True))
    blocks.append(_input("add_title", "Add an expert: expertise", PlainTextInputElement(
        action_id="value", max_length=120), optional=True))
    view = View(type="modal", callback_id=ROSTER_VIEW, title=PlainTextObject(text="Modify the roster"),
                submit=PlainTextObject(text="Save"), close=PlainTextObject(text="Cancel"),
                private_metadata=json.dumps({"discussion_id": discussion_id, "channel": channel}),
                blocks=blocks[:100])
    return view.to_dict()


def loading_view() -> dict[str, Any]:
    """Opened the moment a click asks for a form (a trigger_id lasts 3 s), then replaced by views.update."""
    view = View(type="modal", title=PlainTextObject(text="Council"), close=PlainTextObject(text="Cancel"),
                blocks=[SectionBlock(text=MarkdownTextObject(text="⏳ Loading…"))])
    return view.to_dict()


def notice_view(text: str) -> dict[str, Any]:
    """What an opened form shows when it has nothing to ask after all (the step was already chosen...)."""
    view = View(type="modal", title=PlainTextObject(text="Council"), close=PlainTextObject(text="OK"),
                blocks=[SectionBlock(text=MarkdownTextObject(text=escape(text)[:3000]))])
    return view.to_dict()
