"""Modifying the roster at the terminal before the start: rename a seat, drop an expert, add an expert."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from rich.console import Console
from rich.emoji import Emoji
from rich.text import Text

from adapters.console.translate import FACTS
from core.control import commands as c
from core.models import Persona, Role
from core.storage.store import Store

EDITS = ("Rename a participant", "Drop an expert", "Add an expert", "Done: back to the start")

Ask = Callable[[str], Awaitable[str | None]]  # prints a prompt, returns the line typed (None: input ended)
Do = Callable[[c.Command], Awaitable[bool]]  # runs a command, prints its reply or refusal; True when it was done


class RosterEditor:
    """Numbered menus, each refusing a number it does not show; Enter at any of them goes back one step."""

    def __init__(self, store: Store, console: Console, ask: Ask, do: Do, user_name: str) -> None:
        self.store, self.console, self.ask, self.do, self.user = store, console, ask, do, user_name

    async def run(self, discussion_id: str) -> None:
        while True:
            personas = await self._personas(discussion_id)
            self._list("The council:", [self._seat(p) for p in personas])
            self._list("Modify the roster:", list(EDITS))
            edit = await self.number("Type 1-4 (Enter: back to the start).", len(EDITS))
            if edit is None or edit == 4:
                return
            if edit == 1:
                await self._rename(discussion_id, personas)
            elif edit == 2:
                await self._drop(discussion_id, [p for p in personas if p.role == Role.EXPERT])
            else:
                await self._add(discussion_id)

    async def number(self, prompt: str, count: int) -> int | None:
        """A number from 1 to `count`, asked until one is typed; None for Enter (or the end of input)."""
        while True:
            line = await self.ask(prompt)
            text = (line or "").strip()
            if not text:
                return None
            if text.isdigit() and 1 <= int(text) <= count:
                return int(text)
            self.console.print(Text(f"Please type a number from 1 to {count}, or press Enter to go back.",
                                    style="yellow"))

    async def _rename(self, discussion_id: str, personas: list[Persona]) -> None:
        self._list("Rename whom?", [self._seat(p) for p in personas])
        n = await self.number(f"Type 1-{len(personas)} (Enter: back).", len(personas))
        if n is None:
            return
        target = personas[n - 1]
        name = (await self.ask(f"New name for {target.name} (Enter keeps it):") or "").strip()
        title = (await self.ask(f"New title for {name or target.name} (Enter keeps “{target.title}”):") or "").strip()
        if not name and not title:
            self.console.print(Text("Nothing changed.", style="dim"))
            return
        await self.do(c.ModifyRoster(discussion_id=discussion_id, persona_key=target.key, name=name, title=title,
                                     **FACTS, user_name=self.user))

    async def _drop(self, discussion_id: str, experts: list[Persona]) -> None:
        self._list("Drop which expert?", [self._seat(p) for p in experts])
        n = await self.number(f"Type 1-{len(experts)} (Enter: back).", len(experts))
        if n is not None:
            await self.do(c.ModifyRoster(discussion_id=discussion_id, persona_key=experts[n - 1].key, remove=True,
                                         **FACTS, user_name=self.user))

    async def _add(self, discussion_id: str) -> None:
        name = (await self.ask("The new expert's name (Enter: back):") or "").strip()
        if not name:
            return
        title = (await self.ask(f"{name}'s field, e.g. “Release engineering” (Enter: Expert):") or "").strip()
        await self.do(c.AddExpert(discussion_id=discussion_id, name=name, title=title, **FACTS, user_name=self.user))

    async def _personas(self, discussion_id: str) -> list[Persona]:
        async with self.store.tx() as tx:
            return await tx.personas(discussion_id)

    @staticmethod
    def _seat(p: Persona) -> str:
        return f"{Emoji.replace(p.icon)} {p.name} — {p.title}"

    def _list(self, heading: str, items: list[str]) -> None:
        self.console.print(Text(heading, style="bold"))
        for i, item in enumerate(items, 1):
            self.console.print(Text(f"  [{i}] {item}"), soft_wrap=True)
