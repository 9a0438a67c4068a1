"""Runs a module as `python -m MODULE` does, counting the SQL statements and transactions it runs; on SIGUSR1 it
appends the counts so far to a file, one JSON line each time. bench/load.py --count-sql starts the app through
this (as --profile starts it under py-spy) and signals it as the load begins and ends. Each statement is also
counted under its opening characters, and each transaction under its first statement's, so the bench
can say which statements and transactions a model call runs."""

from __future__ import annotations

import json
import runpy
import signal
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

SHAPE, SHAPE_CHARS = "statement: ", 72  # a statement is counted under its first characters, whitespace collapsed
OPENS = "opens: "  # a transaction is counted under its first statement's opening characters


def count_into(counts: Counter[str]) -> None:
    """Count every engine's statements and transactions into `counts` from now on (bench/library_floor.py runs
    the floor's SQL under the same listeners when the load counts the app's, so both pay for them)."""
    opening: set[int] = set()  # connections whose transaction has begun and run no statement yet

    @event.listens_for(Engine, "begin")
    def begin(conn: Connection) -> None:  # a transaction (or a connection's autocommit session) begins
        counts["transactions"] += 1
        opening.add(id(conn))

    @event.listens_for(Engine, "before_cursor_execute")
    def statement(conn: Connection, _cursor: Any, sql: str, *_: Any) -> None:
        counts["statements"] += 1
        shape = " ".join(sql.split())[:SHAPE_CHARS]
        counts[SHAPE + shape] += 1  # which statements: their opening words
        if id(conn) in opening:  # which transactions: their first statement's opening words
            opening.discard(id(conn))
            counts[OPENS + shape] += 1


def main() -> None:
    out, module, *args = sys.argv[1:]
    counts: Counter[str] = Counter()
    count_into(counts)

    def note(*_: Any) -> None:
        with Path(out).open("a") as f:
            f.write(json.dumps(counts) + "\n")

    signal.signal(signal.SIGUSR1, note)
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
