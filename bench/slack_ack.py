"""50 concurrent `/council` commands against `python -m bot slack` on loopback (fake Web API, offline model):
prints p50/p99 ack latency and the per-channel post rate against their targets; exits 1 on a miss."""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from urllib.parse import urlencode

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.verdict import Figure, add_target_flag, overrides, report  # noqa: E402
from tests.fakes.slack_api import FakeSlack  # noqa: E402
from tests.fakes.slack_signing import free_port, sign  # noqa: E402

SECRET = "bench-signing-secret-0123456789"


def signed(body: str) -> dict[str, str]:
    return {**sign(body, SECRET), "Content-Type": "application/x-www-form-urlencoded"}


async def command(session: aiohttp.ClientSession, url: str, text: str, channel: str, user: str) -> float:
    body = urlencode({"command": "/council", "text": text, "team_id": "T0001", "channel_id": channel,
                      "user_id": user, "user_name": user.lower(), "trigger_id": "1.2.3",
                      "response_url": "http://127.0.0.1:9/unused"})
    started = time.perf_counter()
    async with session.post(url, data=body.encode(), headers=signed(body)) as resp:
        await resp.read()
        if resp.status != 200:
            raise RuntimeError(f"HTTP {resp.status}")
    return (time.perf_counter() - started) * 1000


async def wait_healthy(session: aiohttp.ClientSession, base: str, proc: asyncio.subprocess.Process) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.returncode is not None:
            raise RuntimeError("the app exited during start-up")
        try:
            async with session.get(f"{base}/healthz") as resp:
                if resp.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.1)
    raise RuntimeError("the app did not become healthy within 60 s")


def rate_report(fake: FakeSlack) -> tuple[int, float, float]:
    """Per channel: the most posts in any 1 s window, the smallest gap (ms), the overall posts per second."""
    by_channel: dict[str, list[float]] = defaultdict(list)
    for call in fake.called("chat.postMessage"):
        by_channel[call.params.get("channel", "")].append(call.at)
    worst_window, min_gap, rates = 0, float("inf"), []
    for times in by_channel.values():
        times.sort()
        for i, t in enumerate(times):
            worst_window = max(worst_window, sum(1 for u in times[i:] if u - t < 1.0))
        gaps = [b - a for a, b in itertools.pairwise(times)]
        if gaps:
            min_gap = min(min_gap, min(gaps))
            rates.append((len(times) - 1) / (times[-1] - times[0]))
    return worst_window, min_gap * 1000, max(rates, default=0.0)


async def main(n: int, channels: int, observe_s: float, targets: dict[str, float]) -> int:
    with tempfile.TemporaryDirectory() as folder:
        async with FakeSlack() as fake, aiohttp.ClientSession() as session:
            port = free_port()
            env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "SLACK_APP_TOKEN",
                                                                    "SLACK_CLIENT_ID", "SLACK_CLIENT_SECRET")}
            env |= {"PORT": str(port), "DATABASE_URL": f"sqlite+aiosqlite:///{folder}/bench.db",
                    "SLACK_API_URL": fake.base_url, "SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": SECRET,
                    "COUNCIL_LOG_LEVEL": "WARNING", "COUNCIL_OFFLINE_DELAY_S": "0.05", "PYTHONPATH": str(ROOT)}
            log = Path(folder) / "app.log"
            with log.open("wb") as err:
                proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "bot", "slack", cwd=ROOT, env=env,
                                                            stdout=err, stderr=err)
                base = f"http://127.0.0.1:{port}"
                try:
                    await wait_healthy(session, base, proc)
                    await command(session, f"{base}/slack/events", "help", "C0000", "U0000")  # warm-up, not counted
                    latencies = await asyncio.gather(*(
                        command(session, f"{base}/slack/events", f"Bench question {i}: should we? --rounds 1",
                                f"C{i % channels:04d}", f"U{i:04d}") for i in range(n)))
                    await asyncio.sleep(observe_s)
                finally:
                    proc.terminate()
                    await proc.wait()
            if proc.returncode not in (0, -15):
                sys.stderr.write(log.read_text()[-3000:])
            window, gap, rate = rate_report(fake)
            posts = len(fake.called("chat.postMessage"))
    q = statistics.quantiles(latencies, n=100, method="inclusive")
    print(f"{n} concurrent /council commands over {channels} channels; {posts} messages posted in {observe_s:g} s")
    print(f"ack latency p50 {q[49]:.1f} ms, max {max(latencies):.1f} ms")
    print(f"per-channel posts: at most {window} in any 1 s window, smallest gap {gap:.0f} ms, "
          f"busiest channel {rate:.2f} posts/s")
    return report([Figure("busiest_channel_rate", rate, 1.0, "posts/s"), Figure("ack_p99", q[98], 100.0, "ms")],
                  targets)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--commands", type=int, default=50)
    parser.add_argument("--channels", type=int, default=5)
    parser.add_argument("--observe", type=float, default=10.0, help="seconds to watch the posting after the burst")
    add_target_flag(parser)
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.commands, args.channels, args.observe, overrides(args.target))))
