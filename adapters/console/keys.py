"""What the person types, a line at a time, read in a thread so the discussion keeps running meanwhile."""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import sys
import termios
import threading
from typing import Any

from rich.text import Text

from adapters.console.live import Bottom

BACKSPACES = ("\x7f", "\b")
KILL_LINE, KILL_WORD, END_OF_INPUT, ESCAPE = "\x15", "\x17", "\x04", "\x1b"


class Lines:
    """Lines typed, in order; None at the end of input, and every time after.

    A daemon thread reads the raw descriptor: the program ends when the discussion does, without waiting for one
    more line (an executor thread would hold `asyncio.run` until Enter), and no buffered-reader lock is left held
    for the interpreter to trip over at exit.

    On a terminal, with a `Bottom` to show them in, the keys are read one by one (echo off, Ctrl-C still a
    signal) and the line being typed is drawn in the bottom region: the terminal's own echo would land in the
    middle of the live lines and of posts printed meanwhile. A line, once entered, is printed above."""

    def __init__(self, fd: int | None = None, bottom: Bottom | None = None) -> None:
        self.queue: asyncio.Queue[str | None] = asyncio.Queue()
        self.ended = False
        self._loop = asyncio.get_running_loop()
        self._fd = sys.stdin.fileno() if fd is None else fd
        # Key by key only where the typed line can be drawn: input and output both a terminal.
        self._bottom = bottom if bottom is not None and os.isatty(self._fd) and bottom.console.is_terminal else None
        self._saved: list[Any] | None = None
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._typed, self._escape, self._after_cr = "", "", False
        if self._bottom is not None:
            self._keys_mode()
        threading.Thread(target=self._pump, name="console-stdin", daemon=True).start()

    async def get(self) -> str | None:
        if self.ended:
            return None
        line = await self.queue.get()
        self.ended = line is None
        return line

    def close(self) -> None:
        """Give the terminal back as it was (echo, line editing): the shell reads it next."""
        if self._saved is not None:
            with contextlib.suppress(termios.error):
                termios.tcsetattr(self._fd, termios.TCSADRAIN, self._saved)
            self._saved = None
        if self._bottom is not None:
            self._bottom.type("")

    def _keys_mode(self) -> None:
        try:
            self._saved = termios.tcgetattr(self._fd)
        except termios.error:
            self._bottom = None
            return
        keys = termios.tcgetattr(self._fd)
        keys[3] &= ~(termios.ICANON | termios.ECHO)  # lflag: key by key, not echoed; ISIG keeps Ctrl-C a signal
        keys[6][termios.VMIN], keys[6][termios.VTIME] = 1, 0
        termios.tcsetattr(self._fd, termios.TCSADRAIN, keys)

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
            if self._bottom is not None:
                with contextlib.suppress(RuntimeError):
                    self._loop.call_soon_threadsafe(self._keys, chunk)
                continue
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                self._put(line.decode(errors="replace").rstrip("\r"))
        if pending:
            self._put(pending.decode(errors="replace"))
        self._put(None)

    def _keys(self, chunk: bytes) -> None:
        """Keys typed, in the loop's thread (the only one that draws): edit the line, or enter it."""
        assert self._bottom is not None
        for key in self._decoder.decode(chunk):
            if self._escape or key == ESCAPE:  # arrows and other sequences: not a line editor, so dropped
                self._escape += key
                if len(self._escape) > 1 and (key.isalpha() or key == "~" or self._escape[1] not in "[O"):
                    self._escape = ""
                continue
            if key == "\n" and self._after_cr:  # a CR LF pair is one Enter
                self._after_cr = False
                continue
            self._after_cr = key == "\r"
            if key in "\r\n":
                line, self._typed = self._typed, ""
                self._bottom.type("")
                self._bottom.console.print(Text.assemble(("› ", "bold cyan"), line), soft_wrap=True)
                self.queue.put_nowait(line)
            elif key in BACKSPACES:
                self._typed = self._typed[:-1]
            elif key == KILL_LINE:
                self._typed = ""
            elif key == KILL_WORD:
                self._typed = self._typed.rstrip()
                self._typed = self._typed[:self._typed.rfind(" ") + 1]
            elif key == END_OF_INPUT and not self._typed:
                self.queue.put_nowait(None)
            elif key == "\t":
                self._typed += " "
            elif key.isprintable():
                self._typed += key
        self._bottom.type(self._typed)
