"""What a transaction costs the app on SQLite against SQLAlchemy's own floor: the store's `tx()` (the async engine on
the event loop, as the app runs it) and the same dialect's sync engine on one held connection, each running
transactions of 0 and 3 reads of a discussion by its key, interleaved, on one file of the app's schema with its rows
there. Prints the CPU of each a transaction (the median of `--repeats` runs) and the store's as a multiple of the
sync engine's, judged: an empty transaction (BEGIN and COMMIT alone) at most 4x, one of 3 reads at most 1.4x. While
the async engine spawned a greenlet each for BEGIN and COMMIT they were 5.7-7.4x and 1.45-1.70x; without, 2.1-2.9x
and 0.93-1.25x (this machine, one day)."""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.library_floor import _seed  # noqa: E402
from bench.verdict import Figure, add_target_flag, overrides, report  # noqa: E402

MAX_EMPTY, MAX_READS = 4.0, 1.4  # the store's transaction against the sync engine's


async def measure(transactions: int, repeats: int) -> dict[int, tuple[list[float], list[float]]]:
    from datetime import UTC, datetime

    from sqlalchemy import bindparam, insert, select

    from core.storage import tables as t
    from core.storage.db import make_engine, migrate
    from core.storage.store import Store

    read = select(t.discussions).where(t.discussions.c.id == bindparam("id"))
    found: dict[int, tuple[list[float], list[float]]] = {0: ([], []), 3: ([], [])}
    with tempfile.TemporaryDirectory() as folder:
        engine = make_engine(f"sqlite:///{Path(folder) / 'council.db'}")
        await migrate(engine)
        store, sync = Store(engine), engine.sync_engine
        with sync.begin() as conn:  # the rows read are there, as the app's are: each read converts one
            conn.execute(insert(t.discussions), _seed(datetime.now(UTC)))
        try:
            for _ in range(repeats + 1):  # the first run warms the statement caches and is not counted
                for reads, (app, floor) in found.items():
                    began = time.process_time()
                    for i in range(transactions):
                        async with store.tx() as tx:
                            for _ in range(reads):
                                (await tx.conn.execute(read, {"id": f"d{i % 50}"})).first()
                    app.append((time.process_time() - began) * 1e6 / transactions)
                    with sync.connect() as conn:  # one connection held throughout, as the store holds one
                        began = time.process_time()
                        for i in range(transactions):
                            with conn.begin():
                                for _ in range(reads):
                                    conn.execute(read, {"id": f"d{i % 50}"}).first()
                        floor.append((time.process_time() - began) * 1e6 / transactions)
        finally:
            await store.close()
    return {reads: (app[1:], floor[1:]) for reads, (app, floor) in found.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--transactions", type=int, default=3000, help="transactions of each kind a run")
    parser.add_argument("--repeats", type=int, default=5)
    add_target_flag(parser)
    args = parser.parse_args()
    try:
        import uvloop
        run = uvloop.run
    except ImportError:
        run = asyncio.run
    found = run(measure(args.transactions, args.repeats))
    ratios = {}
    for reads, (app, floor) in found.items():
        a, f = statistics.median(app), statistics.median(floor)
        ratios[reads] = a / f
        print(f"a transaction of {reads} reads: the store {a:.0f} µs, the sync engine {f:.0f} µs, {a / f:.2f}x "
              f"(medians of {len(app)} runs of {args.transactions})")
    # What is left of an empty one is mostly the two context managers the store wraps around the engine's.
    return report([Figure("empty_transaction_ratio", ratios[0], MAX_EMPTY, "x"),
                   Figure("transaction_ratio", ratios[3], MAX_READS, "x")], overrides(args.target))


if __name__ == "__main__":
    sys.exit(main())
