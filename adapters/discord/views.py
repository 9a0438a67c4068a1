"""Persistent components: one DynamicItem button class for every Council action, and the two modals."""

from __future__ import annotations

import logging
import re
from typing import Any, Protocol

import discord

from adapters.discord.translate import CUSTOM_ID, confirm_action_id, custom_id
from core.models import Action

log = logging.getLogger(__name__)
STYLES = {"primary": discord.ButtonStyle.primary, "danger": discord.ButtonStyle.danger,
          "": discord.ButtonStyle.secondary}
LABEL_MAX = 80


class ActionHandler(Protocol):
    async def on_action(self, interaction: discord.Interaction[Any], action: str, value: str) -> None: ...


class CouncilButton(discord.ui.DynamicItem[discord.ui.Button[Any]], template=CUSTOM_ID.pattern):
    """Found again from its custom_id alone, so buttons keep working after a restart (registered in setup_hook)."""

    def __init__(self, action: str, value: str, label: str = "", style: str = "") -> None:
        super().__init__(discord.ui.Button(label=label[:LABEL_MAX] or "…", custom_id=custom_id(action, value),
                                           style=STYLES.get(style, discord.ButtonStyle.secondary)))
        self.action, self.value = action, value

    @classmethod
    async def from_custom_id(cls, interaction: discord.Interaction[Any], item: discord.ui.Item[Any],
                             match: re.Match[str], /) -> CouncilButton:
        return cls(match["action"], match["value"], getattr(item, "label", "") or "")

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        handler = getattr(interaction.client, "handlers", None)
        if handler is not None:
            await handler.on_action(interaction, self.action, self.value)


PICK_ID = re.compile(r"cl-pick\|(?P<poll>\d+)(?:\|(?P<page>\d+))?")
SELECT_OPTIONS = 25  # a select menu's most options
ROWS = 5  # a message's most action rows; a select menu fills one


class CouncilSelect(discord.ui.DynamicItem[discord.ui.Select[Any]], template=PICK_ID.pattern):
    """A place in a ranking as a select menu (`pick:*` actions): the option picked is the ballot. A list longer than
    a menu allows is split over menus (`page` 2, 3...), each naming its range."""

    def __init__(self, poll: str, options: list[tuple[str, str]] | None = None, page: int = 1,
                 placeholder: str = "Choose…") -> None:
        custom = f"cl-pick|{poll}" if page == 1 else f"cl-pick|{poll}|{page}"
        super().__init__(discord.ui.Select(custom_id=custom, placeholder=placeholder, options=[
            discord.SelectOption(label=label[:100] or "…", value=value) for label, value in (options or [])]
            or [discord.SelectOption(label="…", value="0")]))
        self.poll = poll

    @classmethod
    async def from_custom_id(cls, interaction: discord.Interaction[Any], item: discord.ui.Item[Any],
                             match: re.Match[str], /) -> CouncilSelect:
        return cls(match["poll"], page=int(match["page"] or 1))

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        handler = getattr(interaction.client, "handlers", None)
        picked = self.item.values  # what this person picked, filled in from the interaction
        if handler is not None:
            await handler.on_action(interaction, "pick", f"{self.poll}|{picked[0] if picked else ''}")


RANK_ID = re.compile(r"cl-rank\|(?P<place>\d+)\|(?P<turn>.+)")


class CouncilRankSelect(discord.ui.DynamicItem[discord.ui.Select[Any]], template=RANK_ID.pattern):
    """A place of a seated person's ranking as a select menu (`seat:rank:*` actions): its options are option ids,
    and the pick is that place of their ranked turn."""

    def __init__(self, place: str, turn: str, options: list[tuple[str, str]] | None = None) -> None:
        super().__init__(discord.ui.Select(custom_id=f"cl-rank|{place}|{turn}", placeholder=f"#{place}…",
                                           options=[discord.SelectOption(label=label[:100] or "…", value=value)
                                                    for label, value in (options or [])[:SELECT_OPTIONS]]
                                           or [discord.SelectOption(label="…", value="-")]))
        self.place, self.turn = place, turn

    @classmethod
    async def from_custom_id(cls, interaction: discord.Interaction[Any], item: discord.ui.Item[Any],
                             match: re.Match[str], /) -> CouncilRankSelect:
        return cls(match["place"], match["turn"])

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        handler = getattr(interaction.client, "handlers", None)
        picked = self.item.values
        if handler is not None:
            await handler.on_action(interaction, f"seat:rank:{self.place}",
                                    f"{self.turn}|{self.place}|{picked[0] if picked else ''}")


def _rank_menus(actions: list[Action]) -> list[discord.ui.Item[Any]]:
    """One menu per place of a seated person's ranking (each action's value is "turn|place|option id")."""
    places: dict[str, list[Action]] = {}
    for a in actions:
        places.setdefault(a.id.rsplit(":", 1)[0], []).append(a)
    out: list[discord.ui.Item[Any]] = []
    for page in places.values():
        turn, place, _ = page[0].value.split("|", 2)
        if len(f"cl-rank|{place}|{turn}") > 100:  # Discord's custom_id limit: the reply in words still ranks
            log.error("ranking menus of %s dropped: their custom_id would be too long", turn)
            return []
        out.append(CouncilRankSelect(place, turn, [(a.label, a.value.split("|", 2)[2]) for a in page]))
    return out


def view(actions: list[Action], *, reply_to: str = "") -> discord.ui.View | None:
    """Buttons for a post's actions (5 to a row), plus a Reply button when human replies need one; the menus of a
    long choice that do not fit beside them are in views() after it."""
    return views(actions, reply_to=reply_to)[0]


def views(actions: list[Action], *, reply_to: str = "") -> list[discord.ui.View | None]:
    """The post's buttons and menus, over as many messages' views as Discord's 5 rows a message need: the first
    holds the buttons and the menus that fit beside them; each later one, five more menus."""
    menus = _menus([a for a in actions if a.id.startswith("pick:")])
    menus += _rank_menus([a for a in actions if a.id.startswith("seat:rank:")])
    actions = [a for a in actions if not a.id.startswith(("pick:", "seat:rank:"))]
    buttons: list[discord.ui.Item[Any]] = []
    for a in [*actions, Action(id="reply", label="Reply to the council", value=reply_to)] if reply_to else actions:
        try:
            # A final or costly action asks first: its button opens a private question with the real button.
            buttons.append(CouncilButton(confirm_action_id(a.id) if a.confirm else a.id, a.value, a.label, a.style))
        except ValueError:  # a custom_id over 100 characters: better one button missing than a post that never lands
            log.error("button %s dropped: its custom_id would be too long", a.id)
    if len(buttons) > 5 * ROWS:
        log.error("%s buttons: only the first %s fit a message", len(buttons), 5 * ROWS)
    button_rows = -(-min(len(buttons), 5 * ROWS) // 5)
    first = menus[:max(0, ROWS - button_rows)]
    groups: list[list[discord.ui.Item[Any]]] = [[*first, *buttons[:5 * ROWS]]]
    rest = menus[len(first):]
    groups += [list(rest[i:i + ROWS]) for i in range(0, len(rest), ROWS)]
    out: list[discord.ui.View | None] = []
    for items in groups:
        if not items:
            out.append(None)
            continue
        v = discord.ui.View(timeout=None)
        for item in items:
            v.add_item(item)
        out.append(v)
    return out


def _menus(picks: list[Action]) -> list[discord.ui.Item[Any]]:
    """One menu for the choices of one pick (its value is "poll|choice"), or several of 25 naming their ranges."""
    if not picks:
        return []
    poll = picks[0].value.partition("|")[0]
    options = [(a.label, a.value.partition("|")[2]) for a in picks]
    pages = [options[i:i + SELECT_OPTIONS] for i in range(0, len(options), SELECT_OPTIONS)]
    if len(pages) == 1:
        return [CouncilSelect(poll, options)]
    starts = [(n - 1) * SELECT_OPTIONS for n in range(1, len(pages) + 1)]
    return [CouncilSelect(poll, page, n, f"Choose ({start + 1}–{start + len(page)})…")
            for n, (start, page) in enumerate(zip(starts, pages, strict=True), start=1)]


def confirm_view(action: str, value: str, label: str) -> discord.ui.View:
    """The private question of a confirm step: the button that does it, and Cancel."""
    v = discord.ui.View(timeout=None)
    v.add_item(CouncilButton(action, value, label, "danger"))
    v.add_item(CouncilButton("confirm:cancel", value, "Cancel"))
    return v


def settles(action: str) -> bool:
    """Whether a click makes a final choice (the post's buttons then close): not votes, which may change, nor a
    round scheduled, which leaves the round's choice open (Pause and Synthesize stay there) until that round starts."""
    kind = action.partition(":")[0]
    return kind in ("next", "fail") or action == "roster:start"


def settled_view(message: discord.Message, chosen: str) -> discord.ui.View:
    """The message's buttons, all disabled, the chosen one green: the choice reads at a glance and cannot be
    clicked twice. Buttons keep their custom ids, so nothing else about them changes."""
    v = discord.ui.View(timeout=None)
    for row, component in enumerate(message.components):
        for item in getattr(component, "children", []):
            if not isinstance(item, discord.Button):
                continue
            style = discord.ButtonStyle.success if item.custom_id == chosen else discord.ButtonStyle.secondary
            v.add_item(discord.ui.Button(label=item.label, custom_id=item.custom_id, style=style, disabled=True,
                                         row=min(row, 4)))
    return v


def reply_modal(discussion_id: str) -> discord.ui.Modal:
    m = discord.ui.Modal(title="Reply to the council", custom_id=custom_id("reply", discussion_id), timeout=900)
    m.add_item(discord.ui.TextInput(label="Your message", custom_id="text", style=discord.TextStyle.paragraph,
                                    max_length=4000, placeholder="The council hears this on its next turn."))
    return m


def modify_modal(discussion_id: str) -> discord.ui.Modal:
    m = discord.ui.Modal(title="Modify the roster", custom_id=custom_id("modify", discussion_id), timeout=900)
    m.add_item(discord.ui.TextInput(label="Participant (a new name adds an expert)", custom_id="persona",
                                    max_length=80))
    m.add_item(discord.ui.TextInput(label="New name", custom_id="name", required=False, max_length=80))
    m.add_item(discord.ui.TextInput(label="New title", custom_id="title", required=False, max_length=120))
    m.add_item(discord.ui.TextInput(label="A person takes this seat (@mention or id)", custom_id="person",
                                    required=False, max_length=40, placeholder="none to give it back"))
    m.add_item(discord.ui.TextInput(label="Type REMOVE to remove them", custom_id="remove", required=False,
                                    max_length=10))
    return m

