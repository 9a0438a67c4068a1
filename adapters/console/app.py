"""The interactive terminal session: start or resume a discussion, type as a human, choose next actions."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import threading
from pathlib import Path

from rich.console import Console

from adapters.console.translate import FACTS, parse_choice, parse_control
from core.control import commands as c
from core.control.service import Service, UserError
from core.deliberation import closings
from core.models import Discussion, NextAction, Status
from core.running.driver import Driver
from core.showing.export import artifacts, export
from core.showing.moments import plain
from core.storage.store import Store

CHOICES_HINT = "Type 1-5 to choose, or write a message to the council (/pause, /stop)."


class Lines:
    """Reads stdin lines in a thread so the discussion keeps running while the user types.

    A daemon thread reading the raw descriptor: the program ends when the discussion does, without waiting for
    one more line (an executor thread would hold `asyncio.run` until Enter), and no buffered-reader lock is
    left held for the interpreter to trip over at exit."""

    def __init__(self, fd: int | None = None) -> None:
        self.queue: asyncio.Queue[str | None] = asyncio.Queue()
        self.ended = False
        self._loop = asyncio.get_running_loop()
        self._fd = sys.stdin.fileno() if fd is None else fd
        threading.Thread(target=self._pump, name="console-stdin", daemon=True).start()

    async def get(self) -> str | None:
        """The next line typed; None at the end of input, and every time after."""
        if self.ended:
            return None
        line = await self.queue.get()
        self.ended = line is None
        return line

    def _put(self, line: str | None) -> None:
        with contextlib.suppress(RuntimeError):  # the loop already closed: nobody is listening any more
            self._loop.call_soon_threadsafe(self.queue.put_nowait, line)

    def _pump(self) -> None:
        pending = b""
        while True:
            try:
                chunk = os.read(self._fd, 4096)
            except OSError:
                chunk = b""
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                self._put(line.decode(errors="replace").rstrip("\r"))
        if pending:
            self._put(pending.decode(errors="replace"))
        self._put(None)


class ConsoleSession:
    def __init__(self, service: Service, driver: Driver, store: Store, console: Console, user_name: str,
                 stdin_fd: int | None = None) -> None:
        self.service, self.driver, self.store, self.console, self.user = service, driver, store, console, user_name
        self.stdin_fd = stdin_fd  # where typed lines come from (standard input unless a test says otherwise)

    async def start(self, cmd: c.StartDiscussion) -> str:
        reply = await self.service.handle(cmd)
        return reply.discussion_id

    async def resume(self, discussion_id: str) -> str:
        async with self.store.tx() as tx:
            d = await tx.discussion(discussion_id)
            if d is None:
                raise UserError(f"No discussion with id {discussion_id!r}; `python -m bot list` shows them.")
        if d.status == Status.PAUSED:
            await self.service.handle(c.Resume(discussion_id=d.id, **FACTS, user_name=self.user))
        elif d.status in (Status.DONE, Status.STOPPED):
            raise UserError(f"Discussion {d.id} is already {d.status.value}; nothing to resume.")
        else:
            self.console.print(f"[dim]Continuing discussion {d.id} ({d.status.value}, round {d.round}).[/]")
            self.driver.kick(d.id)
        return d.id

    async def run(self, discussion_id: str, *, interactive: bool) -> Status:
        lines = Lines(self.stdin_fd) if interactive else None
        while True:
            await self._wait_idle(discussion_id, lines)
            async with self.store.tx() as tx:
                d = await tx.discussion(discussion_id)
            assert d is not None
            if d.status == Status.DONE and lines is not None:
                await self._final_votes(d, lines)  # the person at the terminal votes before it ends
            if d.status in (Status.DONE, Status.STOPPED, Status.PAUSED):
                return d.status
            if lines is None:
                if d.status == Status.AWAITING_CONFIRMATION:
                    await self._do(c.ConfirmRoster(discussion_id=d.id, **FACTS, user_name=self.user))
                    continue
                if d.status == Status.WAITING:
                    await self._do(c.ChooseNextAction(discussion_id=d.id, action=NextAction.SYNTHESIZE,
                                                      **FACTS, user_name=self.user))
                    continue
                return d.status  # blocked, with nobody to ask
            prompt = {
                Status.AWAITING_CONFIRMATION: "Press Enter to start with this council.",
                Status.WAITING: CHOICES_HINT,
                Status.BLOCKED: "Type /retry, /skip or /stop.",
            }.get(d.status, "")
            self.console.print(f"[bold cyan]> {prompt}[/]")
            line = await lines.get()
            if line is None:
                lines = None
                continue
            if d.status == Status.AWAITING_CONFIRMATION and not line.strip():
                await self._do(c.ConfirmRoster(discussion_id=d.id, **FACTS, user_name=self.user))
                continue
            cmd = parse_choice(line, d.id, self.user) if d.status == Status.WAITING else parse_control(
                line, d.id, self.user)
            if cmd is None:
                self.console.print("[yellow]I didn't understand that.[/] " + CHOICES_HINT)
                continue
            if isinstance(cmd, c.ChooseNextAction) and cmd.action == NextAction.DIFFERENT_TOPIC:
                self.console.print("[bold cyan]> Type the topic for the next round, or press Enter for the "
                                   "council's suggestion.[/]")
                topic = await lines.get()
                cmd = cmd.model_copy(update={"topic": (topic or "").strip()})
            await self._do(cmd)

    async def _final_votes(self, d: Discussion, lines: Lines) -> None:
        """The polls the ending offers, votable here before the program ends: the final poll when the person chose
        the end (after unattended rounds it only shows the council's positions), and a meeting's ranking, place
        by place, closed once every place has the person's pick so their ranking shows beside the owners'."""
        while True:
            async with self.store.tx() as tx:
                polls = [p for p in await tx.polls(d.id) if p.final and not p.closed
                         and (d.auto_rounds is None or closings.ranking_of(p.key))]
                voted = {b.poll_id for p in polls for b in await tx.ballots(p.id) if b.voter_id == FACTS["user_id"]}
            todo = [p for p in polls if p.id not in voted]
            if not todo:
                ranked = [p for p in polls if closings.ranking_of(p.key)]
                if ranked:
                    await self._do(c.ClosePoll(poll_id=ranked[0].id, **FACTS, user_name=self.user))
                    await self.driver.idle()
                return
            poll = todo[0]
            self.console.print(f"[bold cyan]> Vote on “{poll.question}” (poll {poll.id}): type a number "
                               f"1-{len(poll.options)}, or press Enter to finish without voting.[/]")
            line = await lines.get()
            if line is None or not line.strip():
                return
            text = line.strip()
            if not text.isdigit():
                self.console.print(f"[yellow]Please type a number from 1 to {len(poll.options)}.[/]")
                continue
            try:
                reply = await self.service.handle(c.CastBallot(poll_id=poll.id, choice=int(text) - 1,
                                                               **FACTS, user_name=self.user))
            except UserError as exc:
                self.console.print(f"[yellow]{exc}[/]")
                continue
            self.console.print(f"[dim]{reply.text.split('. ')[0]}.[/]")
            await self.driver.idle()

    async def _wait_idle(self, discussion_id: str, lines: Lines | None) -> None:
        """Wait for the driver; lines typed meanwhile are human messages (or /pause, /stop)."""
        idle = asyncio.ensure_future(self.driver.idle())
        while lines is not None and not idle.done():
            getter = asyncio.ensure_future(lines.get())
            done, _ = await asyncio.wait({idle, getter}, return_when=asyncio.FIRST_COMPLETED)
            if getter not in done:
                getter.cancel()
                break
            line = getter.result()
            if line is None:
                lines = None
                break
            cmd = parse_control(line, discussion_id, self.user)
            if cmd is not None:
                await self._do(cmd)
                if not idle.done():
                    continue
                idle = asyncio.ensure_future(self.driver.idle())
        await idle

    async def _do(self, cmd: c.Command) -> None:
        try:
            reply = await self.service.handle(cmd)
        except UserError as exc:
            self.console.print(f"[yellow]{exc}[/]")
            return
        # A message typed gets its "Noted" at once (its answer, if one is owed, comes with the next turn); a choice
        # is shown by the discussion itself ("You chose …").
        if reply.text and not isinstance(cmd, c.ChooseNextAction | c.ClosePoll):
            self.console.print(f"[dim]{plain(reply.text)}[/]")

    async def write_exports(self, discussion_id: str, folder: Path) -> Path:
        doc = await export(self.store, discussion_id, operator=True)  # the terminal is the operator's
        assert doc is not None
        target = folder / discussion_id
        target.mkdir(parents=True, exist_ok=True)
        (target / "transcript.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False))
        for name, text in artifacts(doc).items():
            (target / name).write_text(text)
        return target
