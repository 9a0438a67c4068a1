"""The roster before a discussion starts: its Go, a seat renamed, given to a person or dropped, an expert added."""

from __future__ import annotations

from dataclasses import dataclass

from core.control import clarify
from core.control import commands as c
from core.control.desk import Desk
from core.control.replies import Reply, UserError
from core.deliberation.roster import EXPERT_ICONS, clean_name, clean_title, full_roster, slug
from core.models import Discussion, Persona, Role, Status
from core.running.effects import redraw_header, save_discussion
from core.storage.store import Tx


@dataclass(eq=False)
class Rostering(Desk):
    """ConfirmRoster, ModifyRoster and AddExpert; every change redraws the thread's header."""

    async def confirm_roster(self, cmd: c.ConfirmRoster) -> Reply:
        async with self.store.tx() as tx:
            d = await self.get(tx, cmd.discussion_id)
            if d.status != Status.AWAITING_CONFIRMATION:
                return Reply(text="This discussion has already started.", discussion_id="")
            d.status = Status.RUNNING
            if d.pending.startswith(clarify.PENDING):  # Go: the topic as it is
                d.pending = clarify.after(d)
            await save_discussion(tx, d, self.clock.now())
            await self.notice(tx, d, f"{d.id}:confirmed", f"{cmd.user_name or 'Someone'} started the discussion.")
        return Reply(text="Starting.", discussion_id=d.id)

    async def _open_roster(self, tx: Tx, discussion_id: str) -> tuple[Discussion, list[Persona]]:
        """The discussion and its roster, while the roster may still change (before the discussion starts)."""
        d = await self.get(tx, discussion_id)
        if d.status != Status.AWAITING_CONFIRMATION:
            raise UserError("The roster can only be changed before the discussion starts.")
        return d, await tx.personas(d.id)

    async def modify_roster(self, cmd: c.ModifyRoster) -> Reply:
        async with self.store.tx() as tx:
            d, personas = await self._open_roster(tx, cmd.discussion_id)
            target = next((p for p in personas if p.key == cmd.persona_key), None)
            if target is None:
                raise UserError("That participant is no longer on the roster.")
            if cmd.remove:
                if target.role.value != "expert" or sum(p.role.value == "expert" for p in personas) <= 2:
                    raise UserError("A council needs its fixed roles and at least two experts.")
                personas.remove(target)
            else:
                target.name = clean_name(cmd.name) or target.name
                target.title = clean_title(cmd.title, 120) or target.title
                if cmd.held_by is not None:  # the form gives the seat to a person (or back to the persona: "")
                    target.held_by = cmd.held_by
                    target.name = clean_name(cmd.name) or (clean_name(cmd.held_by_name) if cmd.held_by else "") or \
                        target.name
            await tx.set_personas(d.id, personas)
            await self._refresh_header(tx, d)
        return Reply(text="Roster updated.", discussion_id=d.id)

    async def add_expert(self, cmd: c.AddExpert) -> Reply:
        async with self.store.tx() as tx:
            d, personas = await self._open_roster(tx, cmd.discussion_id)
            experts = [p for p in personas if p.role == Role.EXPERT]
            if len(experts) >= 8:
                raise UserError("A council can have at most eight experts.")
            name = clean_name(cmd.name)
            if not name:
                raise UserError("Please give the new expert a name.")
            key = slug(name)
            while any(p.key == key for p in personas):
                key += "_x"
            experts.append(Persona(key=key, name=name, role=Role.EXPERT,
                                   title=clean_title(cmd.title, 120) or "Expert",
                                   icon=EXPERT_ICONS[len(experts) % len(EXPERT_ICONS)]))
            personas = full_roster(experts)
            await tx.set_personas(d.id, personas)
            await self._refresh_header(tx, d)
        return Reply(text=f"Added {name}.", discussion_id=d.id)

    async def _refresh_header(self, tx: Tx, d: Discussion) -> None:
        await redraw_header(tx, d, self.clock.now())  # the roster changed: the state may not have
        await tx.save_discussion(d, self.clock.now())
