"""The terminal's bottom lines: turns being written and the line being typed, redrawn below what is printed."""

from __future__ import annotations

from markdown_it import MarkdownIt
from rich.console import Console, Group
from rich.live import Live
from rich.text import Text

_MD = MarkdownIt()


def unmarked(text: str) -> str:
    """A turn's Markdown as the words it shows (no `**`, `#` or `_`), on one line: a live line is a glimpse of
    the text being written, and its finished post renders the Markdown properly."""
    blocks = ["".join(child.content if child.type in ("text", "code_inline") else " " if child.type.endswith(
        "break") else "" for child in token.children or []) for token in _MD.parse(text) if token.type == "inline"]
    return " ".join(" ".join(blocks).split())


class Bottom:
    """One rich Live region below the printed thread: a line per turn being written (its last words) and, when
    the program reads the keys itself, the line being typed. Everything printed goes above it, so typed text never
    fuses with a post, and it is erased (transient) when there is nothing left to show."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.writing: dict[str, tuple[str, str]] = {}  # turn key -> (who, text so far)
        self.typing = ""  # the line being typed, when the keys are read here (else the terminal echoes them)
        self._live: Live | None = None

    @property
    def active(self) -> bool:
        return self._live is not None

    def write(self, key: str, who: str, text: str) -> None:
        """`who`: as shown, icon and name (an icon's shortcode already replaced)."""
        self.writing[key] = (who, text)
        self.refresh()

    def done(self, key: str) -> None:
        """A post ends its turn's live text; a notice about a failed turn (its key extends the turn's) ends that."""
        ended = [k for k in self.writing if k == key or key.startswith(k + ":")]
        for k in ended:
            del self.writing[k]
        if ended:
            self.refresh()

    def type(self, line: str) -> None:
        self.typing = line
        self.refresh()

    def close(self) -> None:
        self.writing.clear()
        self.typing = ""
        self.refresh()

    def refresh(self) -> None:
        rows = [self._writing_row(who, text) for who, text in self.writing.values()]
        if self.typing:
            rows.append(Text.assemble(("› ", "bold cyan"), self.typing, ("▌", "cyan")))
        if not rows:
            if self._live is not None:
                self._live.stop()
                self._live = None
            return
        if self._live is None:
            self._live = Live(Group(*rows), console=self.console, transient=True, auto_refresh=False)
            self._live.start(refresh=True)
        else:
            self._live.update(Group(*rows), refresh=True)

    def _writing_row(self, who: str, text: str) -> Text:
        width = max(20, self.console.width - 4)
        words = unmarked(text)
        tail = "…" + words[-width * 2:] if len(words) > width * 2 else words
        return Text.assemble((f"{who} is writing: ", "bold dim"), (tail, "dim"))
