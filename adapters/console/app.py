"""The interactive terminal session: start or resume a discussion, type as a human, choose next actions."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from adapters.console.keys import Lines
from adapters.console.live import Bottom
from adapters.console.roster import RosterEditor
from adapters.console.translate import FACTS, USER_ID, Answer, choices, parse_control, pick, votable
from core.control import commands as c
from core.control.service import Service, UserError
from core.deliberation import closings
from core.models import Action, Discussion, NextAction, Poll, Status
from core.running.driver import Driver, load_state
from core.running.seat_turns import places, ranking_asked
from core.showing import deadlines, filing, posts
from core.showing.export import export
from core.showing.extras import chart_files
from core.showing.moments import plain
from core.storage.store import Store


class Interrupted(Exception):
    """Ctrl-C: the session stops waiting (for a line, or for the council) so the program stops at a safe point."""


class ConsoleSession:
    def __init__(self, service: Service, driver: Driver, store: Store, console: Console, user_name: str,
                 stdin_fd: int | None = None, bottom: Bottom | None = None) -> None:
        self.service, self.driver, self.store, self.console, self.user = service, driver, store, console, user_name
        self.stdin_fd = stdin_fd  # where typed lines come from (standard input unless a test says otherwise)
        self.bottom = bottom  # where the line being typed is drawn on a terminal (None: the terminal echoes it)
        self.interrupts = 0  # Ctrl-C presses so far
        self._interrupted = asyncio.Event()
        self._lines: Lines | None = None
        self._remind = False  # the numbered choices were printed by an earlier process: list them with the prompt

    def interrupt(self) -> None:
        """The first Ctrl-C: whatever the session waits for gives way to stopping at the next safe point."""
        self.interrupts += 1
        if self.interrupts == 1:
            self.console.print(Text("Stopping at the next safe point (after the turn being written), then saving "
                                    "and exporting. Ctrl-C again quits at once.", style="bold yellow"))
            self._interrupted.set()

    async def start(self, cmd: c.StartDiscussion) -> str:
        reply = await self.service.handle(cmd)
        return reply.discussion_id

    async def resume(self, discussion_id: str) -> str:
        async with self.store.tx() as tx:
            d = await tx.discussion(discussion_id)
            if d is None:
                raise UserError(f"No discussion with id {discussion_id!r}; `python -m bot list` shows them.")
        if d.status == Status.PAUSED or (d.status == Status.RUNNING and d.pending == "pause"):
            # Paused, or quit (a second Ctrl-C) while the pause was on its way: it goes on from where it stood.
            await self.service.handle(c.Resume(discussion_id=d.id, **FACTS, user_name=self.user))
        elif d.status in (Status.DONE, Status.STOPPED):
            raise UserError(f"Discussion {d.id} is already {d.status.value}; nothing to resume.")
        else:
            self.console.print(Text(f"Continuing discussion {d.id} ({d.status.value.replace('_', ' ')}, "
                                    f"round {d.round}).", style="dim"))
            self._remind = True
            self.driver.kick(d.id)
        return d.id

    async def stop_here(self, discussion_id: str) -> Status:
        """After the first Ctrl-C: a round being run pauses after its current turn (the driver's safe point: a turn
        is recorded whole or not at all) and writes its resume summary; a discussion at a prompt is already at one.
        Returns the status it stopped in; a second Ctrl-C cancels the wait (the caller quits at once)."""
        d = await self._discussion(discussion_id)
        if d.status == Status.RUNNING and d.pending not in ("pause", "final"):
            await self._do(c.Pause(discussion_id=d.id, **FACTS, user_name=self.user))
        elif d.pending == "final":
            self.console.print(Text("The final synthesis is being written; the discussion ends after it.",
                                    style="dim"))
        await self.driver.idle()
        return (await self._discussion(discussion_id)).status

    def close(self) -> None:
        if self._lines is not None:
            self._lines.close()

    async def _discussion(self, discussion_id: str) -> Discussion:
        async with self.store.tx() as tx:
            d = await tx.discussion(discussion_id)
        assert d is not None
        return d

    async def run(self, discussion_id: str, *, interactive: bool) -> Status:
        """Runs until the discussion ends or pauses; raises Interrupted at the first Ctrl-C."""
        if interactive and self._lines is None:
            self._lines = Lines(self.stdin_fd, self.bottom)
        while True:
            await self._wait_idle(discussion_id)
            d = await self._discussion(discussion_id)
            if d.status == Status.DONE and self._lines is not None:
                await self._final_votes(d)  # the person at the terminal votes before it ends
            if d.status in (Status.DONE, Status.STOPPED, Status.PAUSED):
                return d.status
            if self._lines is None:
                if d.status == Status.AWAITING_CONFIRMATION:
                    await self._do(c.ConfirmRoster(discussion_id=d.id, **FACTS, user_name=self.user))
                    continue
                if d.status == Status.WAITING:
                    await self._do(c.ChooseNextAction(discussion_id=d.id, action=NextAction.SYNTHESIZE,
                                                      **FACTS, user_name=self.user))
                    continue
                return d.status  # blocked, with nobody to ask
            await self._prompt(d)

    def _menu(self, d: Discussion) -> list[Action]:
        """The numbered choices a prompt offers: the same actions, in the same order, as the choice post shows."""
        if d.status == Status.WAITING:
            return choices(posts.next_action_post(d, []).actions)
        if d.status == Status.AWAITING_CONFIRMATION:
            return choices(posts.roster_post(d, []).actions)
        return []

    async def _prompt(self, d: Discussion) -> None:
        """One answer at the prompt the discussion's state asks for: a number picks a choice, anything else is a
        /command or a message."""
        menu = self._menu(d)
        if self._remind and menu:
            self.console.print(Text("   ".join(f"[{i}] {a.label}" for i, a in enumerate(menu, 1))), soft_wrap=True)
            self._remind = False
        if d.status == Status.AWAITING_CONFIRMATION:
            prompt = f"Type 1-{len(menu)} (Enter: 1, start with this council), or /help."
        elif d.status == Status.WAITING:
            prompt = f"Type 1-{len(menu)} to choose, or write a message to the council (/help: commands)."
        else:
            prompt = "Type /retry, /skip or /stop (/help: commands)."
        line = await self._ask(prompt)
        if line is None:
            return
        text = line.strip()
        if d.status == Status.AWAITING_CONFIRMATION and not text:
            text = "1"
        if not menu and await self._rank_by_numbers(d.id, text):
            return
        chosen = pick(text, menu) if menu else None
        if isinstance(chosen, Action):
            return await self._choose(d, chosen)
        said = chosen if chosen is not None else parse_control(text, d.id, self.user)
        if said is None:
            self.console.print(Text("Type a number, a /command or a message (/help lists them).", style="yellow"))
        elif isinstance(said, Answer):
            self._say(said)
        else:
            await self._do(said)

    async def _rank_by_numbers(self, discussion_id: str, text: str) -> bool:
        """Numbers typed while the person's seat is asked to rank ("2 1 3"): the options by their numbers in the
        turn's list, best first, each place picked as a menu would pick it (False: not numbers, or not asked)."""
        numbers = text.split()
        if not numbers or not all(n.isdigit() for n in numbers):
            return False
        async with self.store.tx() as tx:
            state = await load_state(tx, discussion_id)
            asked = await ranking_asked(tx, state, USER_ID) if state is not None else None
        if asked is None or not asked[1]:
            return False
        turn_key, listed = asked
        if any(not 1 <= int(n) <= len(listed) for n in numbers) or len(numbers) > places(listed):
            self._say(Answer(f"Please type up to {places(listed)} numbers from 1 to {len(listed)}, best first "
                             "(e.g. 2 1 3), or write your ranking in words.", mistake=True))
            return True
        for place, n in enumerate(numbers, 1):
            if not await self._do(c.RankPlace(discussion_id=discussion_id, turn_key=turn_key, place=place,
                                              option_id=listed[int(n) - 1].id, **FACTS, user_name=self.user)):
                break
        return True

    async def _choose(self, d: Discussion, action: Action) -> None:
        """A numbered choice, by the id of the action it shows (the label is only what the person reads)."""
        who = {**FACTS, "user_name": self.user}
        if action.id == "roster:start":
            await self._do(c.ConfirmRoster(discussion_id=d.id, **who))
        elif action.id == "roster:modify":
            editor = RosterEditor(self.store, self.console, self._ask, self._do, self.user)
            await editor.run(d.id)
        elif action.id.startswith("next:"):
            chosen = NextAction(action.id.removeprefix("next:"))
            topic = ""
            if chosen == NextAction.DIFFERENT_TOPIC:
                topic = (await self._ask("Type the topic for the next round, or press Enter for the council's "
                                         "suggestion.") or "").strip()
            await self._do(c.ChooseNextAction(discussion_id=d.id, action=chosen, topic=topic, **who))

    async def _ask(self, prompt: str) -> str | None:
        """Print a prompt and read the answer; None when input ended (from then on nobody is asked)."""
        self.console.print(Text(f"> {prompt}", style="bold cyan"), soft_wrap=True)
        line = await self._line()
        if line is None:
            self._lines = None
        return line

    async def _line(self) -> str | None:
        """The next line typed; Ctrl-C meanwhile raises Interrupted."""
        if self._interrupted.is_set():
            raise Interrupted
        if self._lines is None:
            return None
        getter = asyncio.ensure_future(self._lines.get())
        stop = asyncio.ensure_future(self._interrupted.wait())
        await asyncio.wait({getter, stop}, return_when=asyncio.FIRST_COMPLETED)
        stop.cancel()
        if not getter.done():
            getter.cancel()
            raise Interrupted
        return getter.result()

    async def _final_votes(self, d: Discussion) -> None:
        """The polls the ending offers, votable here before the program ends: the final poll when the person chose
        the end or a council asked its question (after unattended rounds of another flow it only shows the
        council's positions), and a meeting's ranking, place by place. Then the person closes them (the verdict
        restated as final) or leaves them open until their deadline."""
        while True:
            async with self.store.tx() as tx:
                polls = [p for p in await tx.polls(d.id)
                         if p.final and not p.closed and votable(d, bool(closings.ranking_of(p.key)))]
                voted = {b.poll_id for p in polls for b in await tx.ballots(p.id) if b.voter_id == FACTS["user_id"]}
            todo = [p for p in polls if p.id not in voted]
            if not todo:
                return await self._close_or_leave(d, polls)
            poll = todo[0]
            line = await self._ask(f"Vote on “{poll.question}” (poll {poll.id}): type a number "
                                   f"1-{len(poll.options)}, or press Enter to finish without voting.")
            if line is None:
                return
            if not line.strip():
                return await self._close_or_leave(d, polls)
            text = line.strip()
            if not text.isdigit() or not 1 <= int(text) <= len(poll.options):
                said = parse_control(text, d.id, self.user) if text.startswith("/") else None
                if isinstance(said, Answer) and not said.mistake:
                    self._say(said)  # /help still helps here
                else:
                    self._say(Answer(f"Please type a number from 1 to {len(poll.options)} (an option of the poll "
                                     "above), or press Enter to finish.", mistake=True))
                continue
            try:
                reply = await self.service.handle(c.CastBallot(poll_id=poll.id, choice=int(text) - 1,
                                                               **FACTS, user_name=self.user))
            except UserError as exc:
                self._say(Answer(str(exc), mistake=True))
                continue
            self.console.print(Text(f"{reply.text.split('. ')[0]}.", style="dim"), soft_wrap=True)
            await self.driver.idle()

    async def _close_or_leave(self, d: Discussion, polls: list[Poll]) -> None:
        """The open polls closed now (/close: the verdict restated as final, a ranking beside the owners'), or
        left open until their deadline (Enter)."""
        until = deadlines.open_until(polls)
        if until is None:
            return
        while True:
            line = await self._ask(f"The poll stays open until {deadlines.shown(d, until)}. Type /close to close it "
                                   "now (its verdict is then final), or press Enter to leave it open.")
            said = (line or "").strip()
            if not said:
                return
            if said.split()[0] == "/close":
                break
            self._say(Answer("Type /close to close the poll now, or press Enter to leave it open.", mistake=True))
        closing = {deadlines.synthesis_of(p): p for p in polls}  # a ranking's places close together
        for poll in closing.values():
            await self._do(c.ClosePoll(poll_id=poll.id, **FACTS, user_name=self.user))
        await self.driver.idle()

    async def _wait_idle(self, discussion_id: str) -> None:
        """Wait for the driver; lines typed meanwhile are messages or /commands; Ctrl-C raises Interrupted (the
        driver is left running: cancelling its wait would cancel the turns it waits for)."""
        idle = asyncio.ensure_future(self.driver.idle())
        stop = asyncio.ensure_future(self._interrupted.wait())
        try:
            while not idle.done():
                waits: set[asyncio.Future[Any]] = {idle, stop}
                getter = asyncio.ensure_future(self._lines.get()) if self._lines is not None else None
                if getter is not None:
                    waits.add(getter)
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                if getter is not None and not getter.done():
                    getter.cancel()
                if stop.done():
                    raise Interrupted
                if getter is None or not getter.done():
                    continue
                line = getter.result()
                if line is None:
                    self._lines = None
                    continue
                if await self._rank_by_numbers(discussion_id, line):
                    continue
                said = parse_control(line, discussion_id, self.user)
                if isinstance(said, Answer):
                    self._say(said)
                elif said is not None:
                    await self._do(said)
                    if idle.done():  # the command gave the driver new work
                        idle = asyncio.ensure_future(self.driver.idle())
        finally:
            stop.cancel()

    def _say(self, answer: Answer) -> None:
        self.console.print(Text(answer.text, style="yellow" if answer.mistake else ""), soft_wrap=True)

    async def _do(self, cmd: c.Command) -> bool:
        try:
            reply = await self.service.handle(cmd)
        except UserError as exc:
            self._say(Answer(str(exc), mistake=True))
            return False
        # A message typed gets its "Noted" at once (its answer, if one is owed, comes with the next turn); a choice
        # is shown by the discussion itself ("You chose …").
        if reply.text and not isinstance(cmd, c.ChooseNextAction | c.ClosePoll):
            self.console.print(Text(plain(reply.text), style="dim"), soft_wrap=True)
        return True

    async def write_exports(self, discussion_id: str, folder: Path) -> Path:
        """The discussion's folder (see `filing.layout`), its charts drawn now: after the person's votes."""
        now = self.driver.clock.now()
        # The terminal is the operator's: hidden results are shown, marked.
        doc = await export(self.store, discussion_id, operator=True, pages=self.driver.config.pages, now=now)
        assert doc is not None
        charts = await chart_files(self.store, discussion_id)
        target = folder / discussion_id
        write_files(target, filing.folder(doc, charts))
        for f in charts:
            self.console.print(Text(f"📊 Chart saved: {target / 'artifacts' / f.name} ({f.title})", style="dim"),
                               soft_wrap=True)
        return target


def write_files(folder: Path, files: dict[str, str | bytes]) -> None:
    """Export files (relative path -> text or bytes) written under `folder`, each once."""
    for relative, content in files.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            (folder / relative).write_bytes(content)
        else:
            (folder / relative).write_text(content, encoding="utf-8")
