"""The terminal as a ChatPort: prints posts with rich and journals their keys so a resume never reprints."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.emoji import Emoji
from rich.text import Text

from adapters.console.live import Bottom
from adapters.console.render import markdown, render
from adapters.console.translate import votable
from core.deliberation import closings
from core.models import Discussion, Persona, Post
from core.showing.moments import plain

REF = "console:"  # a post's ref is its key after this
PANEL = "#panel"  # journalled beside a header's key once its roster panel is drawn


class ConsoleChat:
    def __init__(self, console: Console, journal: Path | None = None, *, voting: bool = True,
                 exports: Path | None = None) -> None:
        self.console, self.exports = console, exports
        self.journal = journal
        self.voting = voting  # False in an unattended run: polls are shown without a vote to offer
        self._seen: set[str] = set()
        if journal is not None and journal.exists():
            self._seen = set(journal.read_text().split())
        self._count = 0
        self.bottom = Bottom(console)  # turns being written (and, read key by key, the line being typed)
        self._rosters: dict[str, list[tuple[str, str, str, str]]] = {}  # discussion -> the roster last shown
        self._states: dict[str, str] = {}  # discussion -> the header's state line last shown
        self._newest_poll: dict[str, int] = {}  # discussion -> the newest poll printed
        self._shown: dict[str, str] = {}  # ref -> the text a post was last printed with (an edit shows what changed)

    async def publish(self, discussion: Discussion, post: Post) -> str:
        self.bottom.done(post.key)
        if post.kind == "header":
            self._rosters[discussion.id] = [(p.key, p.icon, p.name, p.title) for p in post.roster]
            self._states[discussion.id] = post.state
            if post.roster:
                self._remember(post.key + PANEL)
        if post.poll is not None:
            self._newest_poll[discussion.id] = max(self._newest_poll.get(discussion.id, 0), post.poll.poll_id)
        self.console.print(render(post, voting=self._votable(discussion, post)))
        self._extras(discussion, post)
        self._count += 1
        ref = REF + post.key
        self._shown[ref] = post.text
        self._remember(post.key)
        return ref

    async def update(self, discussion: Discussion, ref: str, post: Post) -> None:
        # A terminal cannot edit what it printed: it shows the new version (a poll's counts), and of a header
        # only what changed: the panel once when the council is first seated, then a line per seat filled or
        # changed (an open floor fills its slots one by one), or the state line.
        if post.kind == "header":
            return self._header_changed(discussion, ref[len(REF):], post)
        place = any(a.id.startswith("pick:") for a in post.actions) or bool(closings.ranking_of(ref[len(REF):]))
        if post.poll is not None and post.poll.closed and (
                self._newest_poll.get(discussion.id, 0) > post.poll.poll_id or closings.ranking_of(ref[len(REF):])
                or (post.poll.final and not (self.voting and votable(discussion, place)))):
            # A terminal cannot close it in place, and its tally printed now would land below the newer poll it
            # led to (a round's poll closes at the end, after the final one opened); a ranking's places close
            # together, and the people's ranking beside the owners' follows them. The export keeps each tally.
            return
        before, self._shown[ref] = self._shown.get(ref), post.text
        if post.persona is not None and before is not None:
            return self._edited(post, before)
        self.console.print(render(post, voting=self._votable(discussion, post)))

    def _edited(self, post: Post, before: str) -> None:
        """A persona's post edited (a vote changed its verdict): the lines that changed, under whose post it is;
        printing it whole would repeat, stance table and all, what the terminal showed a moment ago."""
        old = set(before.splitlines())
        changed = [line for line in post.text.splitlines() if line.strip() and line not in old]
        if not changed:
            return
        assert post.persona is not None
        who = f"{Emoji.replace(post.persona.icon)} {post.persona.name} · {post.title}"
        self.console.print(Text.assemble(("✏️ Updated: ", "bold dim"), (who, "dim")), soft_wrap=True)
        self.console.print(markdown(plain("\n".join(changed)), style="dim"))

    def _header_changed(self, discussion: Discussion, key: str, post: Post) -> None:
        """`key`: the header's own (its new versions have keys of their own)."""
        before = self._rosters.get(discussion.id, [])
        now = [(p.key, p.icon, p.name, p.title) for p in post.roster]
        self._rosters[discussion.id] = now if now else before
        if now and not before:
            if not self._printed(key + PANEL):  # once per discussion, across processes (a resume included)
                self.console.print(render(post, voting=self.voting))
                self._remember(key + PANEL)
                return
            before = now  # drawn by an earlier process: from here on, only what changes
        changed = [p for p in post.roster if (p.key, p.icon, p.name, p.title) not in before] if now else []
        for p in changed:
            self.console.print(Text.assemble(f"{Emoji.replace(p.icon)} ", (p.name, "bold"), f" — {p.title}",
                                             style="dim"), soft_wrap=True)
        if post.state != self._states.get(discussion.id):
            self.console.print(Text(plain(post.state), style="dim"), soft_wrap=True)
        self._states[discussion.id] = post.state

    def _votable(self, d: Discussion, post: Post) -> bool:
        """A final poll is votable when the session asks for the vote before it finishes (see `votable`)."""
        place = any(a.id.startswith("pick:") for a in post.actions)
        return self.voting and (post.poll is None or not post.poll.final or votable(d, place))

    async def find(self, discussion: Discussion, key: str) -> str | None:
        return f"console:{key}" if self._printed(key) else None

    async def retract(self, discussion: Discussion, ref: str) -> None:
        """A terminal keeps no message a turn showed while it was written: nothing to remove."""

    async def thinking(self, discussion: Discussion, persona: Persona, key: str) -> None:
        self.console.print(Text(f"{Emoji.replace(persona.icon)} {persona.name} is thinking…", style="dim"),
                           soft_wrap=True)

    def _extras(self, discussion: Discussion, post: Post) -> None:
        """The page link, and charts saved beside the exports (a terminal cannot show a picture)."""
        if post.page_url:
            self.console.print(Text(f"📄 Page: {post.page_url}", style="dim"), soft_wrap=True)
        self._save_files(discussion.id, post)

    def _save_files(self, folder_name: str, post: Post) -> None:
        if post.files and self.exports is not None:
            folder = self.exports / folder_name
            folder.mkdir(parents=True, exist_ok=True)
            for f in post.files:
                (folder / f.name).write_bytes(f.data)
                self.console.print(Text(f"📊 Chart saved: {folder / f.name} ({f.alt})", style="dim"), soft_wrap=True)

    async def stream(self, discussion: Discussion, persona: Persona, key: str, text: str) -> None:
        """On a terminal, the turns being written show live below the thread (the last lines of each), and give
        way to the finished post; piped output gets only finished posts."""
        if not self.console.is_terminal:
            return
        self.bottom.write(key, f"{Emoji.replace(persona.icon)} {persona.name}", text)

    async def announce(self, workspace: str, channel: str, post: Post) -> str:
        self.console.print(render(post, voting=self.voting))
        self._save_files(channel or "digests", post)
        self._remember(post.key)
        return f"console:{post.key}"

    async def find_announcement(self, workspace: str, channel: str, key: str) -> str | None:
        return f"console:{key}" if self._printed(key) else None

    async def tell(self, discussion: Discussion, user_id: str, post: Post) -> None:
        self.console.print(render(post, voting=self.voting))  # the person at the terminal is the only one to tell

    def _printed(self, key: str) -> bool:
        """Recovery only: re-read the journal, which an earlier process may have written to."""
        if key not in self._seen and self.journal is not None and self.journal.exists():
            self._seen |= set(self.journal.read_text().split())
        return key in self._seen

    async def link(self, discussion: Discussion) -> str:
        return ""

    def _remember(self, key: str) -> None:
        self._seen.add(key)
        if self.journal is not None:
            with self.journal.open("a") as f:
                f.write(key + "\n")
