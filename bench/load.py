"""N concurrent discussions, one per channel, through `python -m bot slack` on the fake Slack Web API and the fake
Anthropic Messages API (1 s per call). A lone discussion's first round is timed first, in the same run.

The app runs as a multi-workspace install, with Slack's rate limits on in the fake and its rate budget on in the
app: every workspace is installed through the app's own OAuth flow, and holds `--per-workspace` of the N
discussions (1 by default: a process hosts many teams; Slack's per-workspace tiers, not the app, bound how fast
many discussions in one workspace can go, and bench/platform_limits.py measures that).

Prints: how many finished round 1, the slowest round ÷ the lone round, peak RSS, /healthz p99 during the load,
process CPU milliseconds per model call and the 429s Slack answered during the load (those of the setup before
it are printed apart), each against its target (the slowest-round
ratio ≤ 1.3 up to N = 100 and ≤ 1.5 beyond in one process, ≤ 1.3 across replicas, judged only where the floor
leaves room for it: an app at 1.5× the floor must fit its calls in the time the ratio allows on the core it gets,
and the bench says which and why; no 429s, no post twice, no turn asked of the model twice), and exits 1 on a miss.
It also prints what the machine's cores spent during the load (the app, the fakes, PostgreSQL, the rest) beside
what the ratio target leaves to spend: a CPU-bound load meets the ratio only if it fits in that.
`--replicas R` runs R processes on one PostgreSQL database (DATABASE_URL: a fresh database is made on that server
and dropped afterwards), the starts spread over them in turn. Set
DATABASE_URL to run it on PostgreSQL instead of a fresh SQLite file. `--count-sql` also prints the SQL statements
and transactions the app ran a model call during the load, and the statements it ran most, and judges the first
two (≤ 12 statements, ≤ 4 transactions). The model's turns are about 1,500 characters in 12-character deltas.
The load's discussions run `--rounds` rounds (3): round 1 is timed against the lone round as before, and a model
call of the last round (from the first discussion finishing the round before it until every one finishing it: every
call of the last round, as round 1's window holds every call of round 1) is judged against one of round 1 (≤ 1.15×,
CPU and statements); a request the model is sent twice counts as a turn run twice.
The libraries' floor (bench/library_floor.py) runs `--floor-runs` times before the load and as many after, and the
app's CPU a model call (all replicas' CPU ÷ all calls) is judged as a multiple of their median (≤ 1.5×); with one
replica and taskset the app and the floor's client run on core 0, the fakes on core 1; replicas are not pinned."""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import re
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
from cryptography.fernet import Fernet

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from adapters.slack.render import EVENT_TYPE, THINKING_EVENT  # noqa: E402
from bench import profile_split, users  # noqa: E402
from bench.common import (  # noqa: E402
    DELTA_CHARS,
    DELTA_GAP_S,
    REPLY_CHARS,
    SPEEDOMETER,
    mean_kb,
    pinned,
    sizes,
    timed_in,
    timings,
)
from bench.platform_limits import Statuses, drop_database, fresh_database, healthy  # noqa: E402
from bench.sql_count import OPENS, SHAPE  # noqa: E402
from bench.verdict import Figure, add_target_flag, overrides, report  # noqa: E402
from tests.fakes.anthropic_server import FakeAnthropic  # noqa: E402
from tests.fakes.slack_api import FakeSlack  # noqa: E402
from tests.fakes.slack_signing import free_port, sign  # noqa: E402

SECRET = "load-signing-secret"
TICKS = os.sysconf("SC_CLK_TCK")
MARK = "Round 1 synthesis"
ROUND_MARK = re.compile(r"Round (\d+) synthesis")
ROUNDS = 3  # --rounds: each discussion runs this many rounds; round 1 is timed, the last compared with it
MAX_GROWTH = 1.15  # a model call in the last round against one in round 1 (CPU, and statements with --count-sql)
TOP_STATEMENTS = 12  # --count-sql: the statements run most a model call, listed under the totals
# The database work a model call may cost (--count-sql): statements are round trips, transactions a BEGIN, a COMMIT
# and a lease check each; neither changes with the machine's speed.
MAX_STATEMENTS, MAX_TRANSACTIONS = 12.0, 4.0
FLOOR = ROOT / "bench" / "library_floor.py"
MAX_FLOOR_RATIO = 1.6  # the app's CPU a model call against the libraries' floor measured in the same run
MAX_CHARTS = 0.25  # the charts' CPU (off the event loop) against that of the discussions' model calls
MAX_SLACK_CALLS = 3.0  # Slack calls a model call, over whole discussions
PROBE_GAP_S = 0.05  # between two /healthz probes during round 1, as a load balancer's health checks
SEED = 61  # --seed: the generator of the discussions' topics, rosters and the model's answers
TIME_SCALE = 1.0  # --time-scale: Slack's limits and the app's pacing counted this many times faster (quick runs)
GAP_S = DELTA_GAP_S  # --delta-gap: seconds between the model's deltas
FLOOR_CALLS = 1300  # --floor-calls: model calls in each run of the floor


class TimedSlack(FakeSlack):
    """The fake Web API, noting when each channel first shows its round-1 synthesis."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.round_done: dict[str, float] = {}  # round 1's
        self.rounds_done: dict[tuple[str, int], float] = {}  # (channel, round) -> when its synthesis showed
        self.noted = asyncio.Event()
        self.first_shown: defaultdict[int, asyncio.Event] = defaultdict(asyncio.Event)  # a round's first synthesis
        self.polls: asyncio.Queue[tuple[str, str]] = asyncio.Queue()  # (channel, ts) of each poll as it shows
        self._polled: set[tuple[str, str]] = set()

    def _poll(self, p: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
        """A poll's first showing is queued for the load's people to vote on."""
        if answer.get("ok") and "vote:" in str(p.get("blocks", "")):
            shown = (str(answer["channel"]), str(answer["ts"]))
            if shown not in self._polled:
                self._polled.add(shown)
                self.polls.put_nowait(shown)
        return answer

    def _note(self, p: dict[str, Any]) -> None:
        channel = p.get("channel", "")
        shown = f"{p.get('text', '')}{p.get('blocks', '')}"
        for found in ROUND_MARK.finditer(shown):
            if (channel, int(found.group(1))) not in self.rounds_done:
                self.rounds_done[channel, int(found.group(1))] = time.monotonic()
                self.first_shown[int(found.group(1))].set()
                self.noted.set()
        if channel not in self.round_done and MARK in shown:
            self.round_done[channel] = time.monotonic()
            self.noted.set()

    def m_chat_postMessage(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        self._note(p)
        return self._poll(p, super().m_chat_postMessage(p, team))

    def m_chat_update(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        self._note(p)
        return self._poll(p, super().m_chat_update(p, team))


def carried(method: str, params: dict[str, Any]) -> str:
    """What a Slack call carries, from its message metadata: a turn's placeholder, its live text, a post (new, or
    edited in: a placeholder filled, a poll or header redrawn), or something else by its method."""
    meta = params.get("metadata") or {}
    if isinstance(meta, str):
        try:
            meta = json.loads(meta)
        except ValueError:
            meta = {}
    kind = meta.get("event_type") if isinstance(meta, dict) else None
    if method in ("chat.postMessage", "chat.update") and kind in (THINKING_EVENT, EVENT_TYPE):
        return {(THINKING_EVENT, "chat.postMessage"): "placeholders", (THINKING_EVENT, "chat.update"): "live text",
                (EVENT_TYPE, "chat.postMessage"): "new posts", (EVENT_TYPE, "chat.update"): "posts edited in"}[
            kind, method]
    return method


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def thread_cpu_s(pid: int) -> dict[str, float]:
    """CPU seconds of the main thread (the event loop) and of all other threads (the database's among them)."""
    out: dict[str, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        name = "event loop" if task.name == str(pid) else "other threads"
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended between the listing and the read
            continue
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / TICKS
    return out


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def machine_s() -> tuple[float, float]:
    """CPU seconds this machine's cores have been busy, and seconds its host gave to others while we waited
    (steal): the load shares the cores with the fakes, the database and whatever else the host runs."""
    user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, Path("/proc/stat").read_text().split()[1:9])
    return (user + nice + system + irq + softirq) / TICKS, steal / TICKS


def postgres_s() -> float:
    """CPU seconds of this machine's PostgreSQL server processes (0 when none runs here), those that ended among
    them: a connection's server process exits with it, and its time is then counted in the server's main process
    (as children's time, once reaped)."""
    total = 0.0
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and (proc / "comm").read_text().strip() == "postgres":
                fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
                total += sum(int(f) for f in fields[11:15]) / TICKS  # utime, stime, cutime, cstime
        except OSError:  # the process ended between the listing and the read
            continue
    return total


def app_pid(parent: int) -> int:
    children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
    return int(children[0])


def duplicates(slack: FakeSlack) -> int:
    """Posts Slack holds twice: two messages carrying the same post part (the key every post's metadata names)."""
    seen: set[tuple[str, str, int]] = set()
    twice = 0
    for m in slack.messages:
        meta = m.metadata or {}
        if meta.get("event_type") != EVENT_TYPE:
            continue
        part = (m.channel, str(meta["event_payload"].get("key")), int(meta["event_payload"].get("part", 0)))
        twice += part in seen
        seen.add(part)
    return twice


async def sql_counts(pids: list[int], files: list[Path]) -> Counter[str]:
    """The statements and transactions every app process has run so far (see bench/sql_count.py), summed."""
    total: Counter[str] = Counter()
    for pid, path in zip(pids, files, strict=True):
        lines = len(path.read_text().splitlines()) if path.exists() else 0
        os.kill(pid, signal.SIGUSR1)
        for _ in range(500):  # the app writes between two steps of its loop: at once, unless it is busy
            if path.exists() and len(written := path.read_text().splitlines()) > lines:
                total.update(json.loads(written[-1]))
                break
            await asyncio.sleep(0.01)
        else:
            raise RuntimeError(f"the app {pid} wrote no SQL counts when asked")
    return total


async def install(http: aiohttp.ClientSession, base: str, team: str) -> None:
    """The app's own OAuth flow, as a browser and Slack would drive it: the install page, then the redirect back
    with a code the fake Slack exchanges for this workspace's bot token."""
    async with http.get(f"{base}/slack/install") as resp:
        page = await resp.text()
        cookie = resp.cookies["slack-app-oauth-state"].value
    state = re.search(r"state=([\w-]+)", page)
    assert state, "no state on the install page"
    async with http.get(f"{base}/slack/oauth_redirect", params={"code": f"good-code:{team}", "state": state.group(1)},
                        headers={"Cookie": f"slack-app-oauth-state={cookie}"}) as resp:
        page = await resp.text()  # read, so the connection is free for the next request (see start)
        assert resp.status == 200, page


def no_room(floor_ms: float | None, calls: int, replicas: int, cores: int, within_s: float) -> str:
    """Why the round's ratio cannot be judged on this run ("" when it can): an app at its CPU target
    (MAX_FLOOR_RATIO × the floor a call) must fit its share of the calls in the time the ratio target allows, on the
    share of a core it gets (one at most: an event loop is one thread; less when the apps outnumber the cores)."""
    if floor_ms is None:
        return "no floor was measured (--floor-runs 0), so nothing says this machine leaves room for it"
    needs = MAX_FLOOR_RATIO * floor_ms / 1000 * calls / replicas
    has = within_s * min(1.0, cores / replicas)
    if needs <= has:
        return ""
    return (f"at {MAX_FLOOR_RATIO:g}x the floor an app needs {needs:.1f} s of CPU for its {calls / replicas:.0f} "
            f"calls, more than the {has:.1f} s the ratio target leaves it")


async def floor_ms(runs: int, database: str, lanes: int, latency_s: float, count_sql: bool) -> list[float]:
    """The libraries' floor a model call (bench/library_floor.py, one run each), pinned as the app is, at the load's
    concurrency (a replica's discussions), pace and SQL instrumentation."""
    found = []
    for _ in range(runs):
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(FLOOR), "--repeats", "1", "--pin", "--target", "library_floor_share=1e9", "--lanes",
            str(lanes), "--latency", str(latency_s), "--delta-gap", str(GAP_S), "--calls", str(FLOOR_CALLS),
            *(["--count-sql"] if count_sql else []), cwd=ROOT,
            env={**os.environ, "DATABASE_URL": database} if database else
            {k: v for k, v in os.environ.items() if k != "DATABASE_URL"},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        out = (await proc.communicate())[0].decode()
        got = re.search(r"^libraries alone: ([\d.]+) ms", out, re.M)
        found.append(float(got.group(1)) if got else float("nan"))
    return found


async def main(n: int, per_workspace: int, replicas: int, latency_s: float, within_s: float, profile: str = "",
               targets: dict[str, float] | None = None, count_sql: bool = False, floor_runs: int = 3) -> int:
    database = os.environ.get("DATABASE_URL", "")
    if replicas > 1 and not database.startswith("postgres"):
        print("--replicas needs DATABASE_URL=postgresql://… (the replicas share one database)", file=sys.stderr)
        return 2
    made = await fresh_database(database) if database.startswith("postgres") else None
    try:
        return await measure(n, per_workspace, replicas, latency_s, within_s, profile, targets,
                             made[0] if made else "", count_sql, floor_runs)
    finally:
        if made is not None:
            await drop_database(database, made[1])


async def measure(n: int, per_workspace: int, replicas: int, latency_s: float, within_s: float, profile: str,
                  targets: dict[str, float] | None, database: str, count_sql: bool = False, floor_runs: int = 3
                  ) -> int:
    # The app on core 0 and this process (the fakes, the probes) on core 1, as the floor pins its client and fakes:
    # the two figures are then comparable. Only one app can have a core of its own.
    app_core = pinned(0) if replicas == 1 else []
    if app_core:
        os.sched_setaffinity(0, {1})
    lanes = max(1, n // replicas)  # the floor runs one replica's discussions at once
    # Before the load, and again after it: the machine's speed drifts.
    floors = await floor_ms(floor_runs, database, lanes, latency_s, count_sql)
    ports = [free_port() for _ in range(replicas)]
    bases = [f"http://127.0.0.1:{port}" for port in ports]
    channels = [f"C{i:04d}" for i in range(n)]
    team_of = {c: f"T{i // per_workspace:05d}" for i, c in enumerate(channels)} | {"CLONE": "TLONE"}
    base_of = {c: bases[i % replicas] for i, c in enumerate(channels)} | {"CLONE": bases[0]}
    drawn = dict(zip(channels, users.starts(n, SEED), strict=True)) | {"CLONE": users.starts(1, SEED - 1)[0]}
    async with TimedSlack(time_scale=TIME_SCALE) as slack, FakeAnthropic(
            latency_s=latency_s, reply_chars=REPLY_CHARS, chunk_chars=DELTA_CHARS, delta_gap_s=GAP_S,
            reply=users.Model(SEED, REPLY_CHARS)) as model, \
            aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http, \
            aiohttp.ClientSession() as prober_http:  # the probe's own connection, as a load balancer's health check
        # The people who start and vote are Slack users of their workspace and members of their channel, as anyone
        # who can click a poll's button is: users.info knows them (the app caches what it read), and a confirmation
        # only they see reaches them there. Unknown to the fake, each vote's lookup failed uncached, and each
        # confirmation went out twice (a refused chat.postEphemeral, then a direct message): 0.3 Slack calls a
        # model call that no workspace makes.
        for channel in [*channels, "CLONE"]:
            for person in users.people(channel):
                slack.add_user(person, f"user-{person}", team=team_of[channel])
        with tempfile.TemporaryDirectory() as folder:
            env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "COUNCIL_", "ANTHROPIC_"))}
            env["DATABASE_URL"] = database or f"sqlite:///{Path(folder) / 'council.db'}"
            env |= {"SLACK_API_URL": slack.base_url, "SLACK_CLIENT_ID": "1234.5678",
                    "SLACK_CLIENT_SECRET": "load-client-secret",
                    "COUNCIL_ENCRYPTION_KEY": Fernet.generate_key().decode(),
                    "SLACK_SIGNING_SECRET": SECRET, "ANTHROPIC_API_KEY": "sk-ant-load-not-a-secret",
                    "ANTHROPIC_BASE_URL": model.base_url, "COUNCIL_LOG_LEVEL": "WARNING",
                    "COUNCIL_BUDGET_USD": "1000", "SLACK_TIME_SCALE": str(TIME_SCALE),
                    # No operator's cap: at their defaults the whole process's day ($50) blocked 279 of a
                    # 300-discussion load's discussions before round 3, so no whole discussion was judged.
                    "COUNCIL_WORKSPACE_BUDGET_USD_PER_DAY": "0", "COUNCIL_PROCESS_DAILY_USD": "0"}
            logs = [(Path(folder) / f"app-{r}.log").open("wb") for r in range(replicas)]
            counted = [Path(folder) / f"sql-{r}.jsonl" for r in range(replicas)]

            def command(r: int) -> list[str]:
                cmd = [*app_core, sys.executable, "-m", "bot", "slack"]
                if count_sql:  # the app counts its statements, and writes the counts so far when signalled
                    cmd = [*app_core, sys.executable, str(ROOT / "bench" / "sql_count.py"), str(counted[r]), "bot",
                           "slack"]
                if profile:  # py-spy starts the app as its child and samples it; figures are for that child
                    cmd = ["py-spy", "record", "--nonblocking", "-r", "200", "-f", "speedscope", "-o", profile, "--",
                           *cmd]
                return cmd

            procs: list[asyncio.subprocess.Process] = []
            speedometer: asyncio.subprocess.Process | None = None
            try:
                for r in range(replicas):  # one at a time: they migrate under a lock anyway
                    procs.append(await asyncio.create_subprocess_exec(
                        *command(r), cwd=folder, env={**env, "PORT": str(ports[r])}, stdout=logs[r], stderr=logs[r]))
                    await healthy(http, bases[r], procs[-1])
                pids = [app_pid(p.pid) if profile else p.pid for p in procs]
                for team in sorted(set(team_of.values())):
                    await install(http, bases[0], team)

                async def start(channel: str) -> float:
                    # The lone discussion runs round 1 alone, the reference; the load's run ROUNDS rounds.
                    # Unattended to their closings, one round or more (without it, one round waits for people).
                    more = f" --rounds {ROUNDS}" if channel != "CLONE" else ""
                    topic, experts = drawn[channel]  # each discussion its own, from the seeded generator
                    body = urlencode({"command": "/council", "text": f"{topic} --experts {experts}{more}",
                                      "team_id": team_of[channel], "channel_id": channel,
                                      "user_id": users.starter(channel), "user_name": f"user-{channel}",
                                      "trigger_id": slack.trigger(), "response_url": "http://127.0.0.1:9/unused"})
                    headers = {**sign(body, SECRET), "Content-Type": "application/x-www-form-urlencoded"}
                    began = time.monotonic()
                    async with http.post(f"{base_of[channel]}/slack/events", data=body.encode(),
                                         headers=headers) as resp:
                        assert resp.status == 200, resp.status
                        # Read the ack, as Slack does: a connection whose response was left unread made the next
                        # request on it (the /healthz probe, before it had a connection of its own) wait 0.4-0.9 s.
                        await resp.read()
                    return began

                async def rounds(channels: list[str], began: dict[str, float]) -> None:
                    deadline = time.monotonic() + within_s
                    while not all(c in slack.round_done for c in channels):
                        slack.noted.clear()
                        try:
                            await asyncio.wait_for(slack.noted.wait(), max(0.0, deadline - time.monotonic()))
                        except TimeoutError:
                            return

                async def until_round(channels: list[str], r: int) -> bool:
                    deadline = time.monotonic() + within_s
                    while not all((c, r) in slack.rounds_done for c in channels):
                        slack.noted.clear()
                        try:
                            await asyncio.wait_for(slack.noted.wait(), max(0.0, deadline - time.monotonic()))
                        except TimeoutError:
                            return False
                    return True

                async def settled() -> None:
                    """Until Slack has had no call from the app for a quiet spell (paced edits come closer than it),
                    or 30 s: a fixed sleep let a quick run's last posts of the lone round land in the load's counts."""
                    quiet, deadline = max(0.5, 2.0 / TIME_SCALE), time.monotonic() + 30.0
                    seen = -1
                    while len(slack.calls) != seen and time.monotonic() < deadline:
                        seen = len(slack.calls)
                        await asyncio.sleep(quiet)

                async def finished() -> None:
                    """Until every discussion reads done in the database, or `within_s`: the last round's synthesis
                    comes before the closing (the decision record, the charts, the final poll), and a quiet spell in
                    Slack's calls fell between them on a busy loop (the window then missed the closings' calls)."""
                    statuses, deadline = Statuses(env["DATABASE_URL"]), time.monotonic() + within_s
                    try:
                        while time.monotonic() < deadline:
                            read = await statuses.read()
                            # The load's n, beside the lone discussion (one round, left waiting for people).
                            if sum(status == "done" for status in read.values()) >= n:
                                return
                            await asyncio.sleep(0.2)
                    finally:
                        await statuses.close()

                async def snapshot() -> tuple[float, int, Counter[str]]:
                    return (sum(cpu_s(pid) for pid in pids), model.request_count,
                            await sql_counts(pids, counted) if count_sql else Counter())

                async def first_to(r: int) -> tuple[float, int, Counter[str]]:
                    """A snapshot as the first of the load's discussions shows round `r`'s synthesis: no discussion has
                    asked the model anything of the next round before it."""
                    await slack.first_shown[r].wait()  # the lone discussion ran one round: any r > 1 is the load's
                    windows["last"] = (time.monotonic(), float("inf"))
                    return await snapshot()

                lone_began = {"CLONE": await start("CLONE")}
                await rounds(["CLONE"], lone_began)
                if "CLONE" not in slack.round_done:
                    print("the lone discussion did not finish round 1", file=sys.stderr)
                    return 1
                lone = slack.round_done["CLONE"] - lone_began["CLONE"]
                await settled()  # the lone discussion's last posts go out before the load, not into its counts

                async def probe_cost(span_s: float = 2.0) -> float:
                    """The app's CPU seconds a /healthz probe, kept out of its CPU a model call: the app idle for
                    `span_s`, then probed one after another for as long, the idle rate taken off."""
                    idle_from, at = sum(cpu_s(pid) for pid in pids), time.monotonic()
                    await asyncio.sleep(span_s)
                    idle_rate = (sum(cpu_s(pid) for pid in pids) - idle_from) / (time.monotonic() - at)
                    busy_from, at, probes = sum(cpu_s(pid) for pid in pids), time.monotonic(), 0
                    while time.monotonic() - at < span_s:
                        async with prober_http.get(f"{bases[probes % replicas]}/healthz") as resp:
                            await resp.read()
                        probes += 1
                    used = sum(cpu_s(pid) for pid in pids) - busy_from - idle_rate * (time.monotonic() - at)
                    return max(0.0, used) / max(probes, 1)

                per_probe_s = await probe_cost()

                calls_before, cpu_before = model.request_count, sum(cpu_s(pid) for pid in pids)
                sql_before = await sql_counts(pids, counted) if count_sql else Counter()
                slack_before = len(slack.calls)
                # The 429s before the load (the bench's setup: every workspace's OAuth install within a second)
                # are told apart: the figure judged is the load's.
                setup_429 = Counter(slack.answered_429)
                threads_before = [thread_cpu_s(pid) for pid in pids]
                mine_before = cpu_s(os.getpid())
                machine_before, postgres_before = machine_s(), postgres_s()
                health: list[float] = []
                windows: dict[str, tuple[float, float]] = {}  # monotonic (from, to) of round 1, and the last round
                stop = asyncio.Event()

                async def vote() -> None:
                    """People vote on the load's polls as they show: one to three each, for options drawn."""
                    rng = random.Random(SEED)
                    while True:
                        channel, ts = await slack.polls.get()
                        shown = slack.find(channel, ts)
                        if channel == "CLONE" or shown is None:
                            continue
                        for payload in users.ballots(rng, channel, team_of[channel], shown.wire(False)):
                            body = urlencode({"payload": json.dumps(payload)})
                            headers = {**sign(body, SECRET), "Content-Type": "application/x-www-form-urlencoded"}
                            async with http.post(f"{base_of[channel]}/slack/events", data=body.encode(),
                                                 headers=headers) as resp:
                                await resp.read()
                            votes[resp.status] += 1

                async def probe() -> None:
                    i = 0
                    while not stop.is_set():
                        t0 = time.perf_counter()
                        async with prober_http.get(f"{bases[i % replicas]}/healthz") as resp:
                            await resp.read()
                        health.append((time.perf_counter() - t0) * 1000)
                        i += 1
                        await asyncio.sleep(PROBE_GAP_S)

                # This process serves the fakes and times the probes: its own collector's full passes over the fakes'
                # growing record of every call (about 0.1 s each) must not be timed as the app's latency, nor pause
                # every discussion's model stream.
                gc.freeze()
                gc.disable()
                speedometer = await asyncio.create_subprocess_exec(sys.executable, "-c", SPEEDOMETER,
                                                                   stdout=asyncio.subprocess.PIPE)
                prober = asyncio.create_task(probe())
                votes: Counter[int] = Counter()  # the votes' answers, by HTTP status
                voter = asyncio.create_task(vote())
                last_began = asyncio.create_task(first_to(ROUNDS - 1)) if ROUNDS > 1 else None
                began = dict(zip(channels, await asyncio.gather(*(start(c) for c in channels)), strict=True))
                await rounds(channels, began)
                windows["round 1"] = (min(began.values()), time.monotonic())
                stop.set()
                await prober
                gc.enable()
                await asyncio.sleep(1.0 / TIME_SCALE)  # a turn run twice would be asking the model now
                probes_s = len(health) * per_probe_s  # the probes' share, charged to no model call
                cpu_used = sum(cpu_s(pid) for pid in pids) - cpu_before - probes_s
                calls = model.request_count - calls_before
                sql = await sql_counts(pids, counted) - sql_before if count_sql else Counter()
                threads: dict[str, float] = {}
                for pid, before in zip(pids, threads_before, strict=True):
                    for k, v in thread_cpu_s(pid).items():
                        threads[k] = threads.get(k, 0.0) + v - before.get(k, 0.0)
                threads["event loop"] = threads.get("event loop", 0.0) - probes_s  # the probes are served on the loop
                load_s = time.monotonic() - min(began.values())
                fakes_cpu = cpu_s(os.getpid()) - mine_before
                busy, stolen = (after - before for after, before in zip(machine_s(), machine_before, strict=True))
                postgres_cpu = postgres_s() - postgres_before
                durations = [slack.round_done[c] - began[c] for c in channels if c in slack.round_done]
                rss = max(peak_rss_mb(pid) for pid in pids)
                # The last round against round 1 (the window from the load's start until every discussion finished
                # round 1: every call of round 1, and the next round's calls of the first to finish it): the window
                # from the first discussion finishing the round before it until every one finishing it, which holds
                # every call of the last round. Begun as every discussion finished the round before, it left out the
                # calls the first to finish had made by then, yet held every closing (2,665-3,738 calls, 1.10-1.38x
                # round 1's CPU a call, in runs of one build). A call that costs more as the discussion grows shows.
                last: tuple[float, int, Counter[str]] | None = None
                sql_whole: tuple[int, Counter[str]] | None = None  # calls and statements of whole discussions
                whole_cpu: tuple[float, int] | None = None  # CPU (the probes' taken off) and calls of the same

                def threads_since() -> Counter[str]:
                    used: Counter[str] = Counter()
                    for pid, before in zip(pids, threads_before, strict=True):
                        used.update({k: v - before.get(k, 0.0) for k, v in thread_cpu_s(pid).items()})
                    return used

                whole_threads: Counter[str] = Counter()
                made: Counter[str] = Counter()  # each request the load's discussions made, as sent
                if ROUNDS > 1:
                    if await until_round(channels, ROUNDS - 1):
                        assert last_began is not None
                        first = await last_began
                        if await until_round(channels, ROUNDS):
                            end = await snapshot()
                            windows["last"] = (windows["last"][0], time.monotonic())
                            last = (end[0] - first[0], end[1] - first[1], end[2] - first[2])
                            # The statements of whole discussions, from the load's start until every last post is
                            # out: a window's edge cuts a step's transactions from the calls they serve.
                            await finished()
                            await settled()
                            whole = await snapshot()
                            whole_threads = threads_since()
                            sql_whole = (whole[1] - calls_before, whole[2] - sql_before)
                            whole_cpu = (whole[0] - cpu_before - probes_s, whole[1] - calls_before)
                else:  # one round: judged whole all the same, its closings included
                    await finished()
                    await settled()
                    whole = await snapshot()
                    whole_threads = threads_since()
                    sql_whole = (whole[1] - calls_before, whole[2] - sql_before)
                    whole_cpu = (whole[0] - cpu_before - probes_s, whole[1] - calls_before)
                if ROUNDS > 1 and last_began is not None:
                    last_began.cancel()  # not every discussion got as far: nothing waits for it
                await asyncio.sleep(1.0 / TIME_SCALE)  # a turn run twice would be asking the model now
                # A turn asked twice sends the model the same request twice: the same prompt, the same persona. (Its
                # discussions differ, so their calls are not counted against a lone discussion's.)
                made.update(json.dumps(body, sort_keys=True) for body in model.requests[calls_before:])
                voter.cancel()
                # Timed until the last round ends too: the machine's speed can change between round 1 and it.
                speedometer.terminate()
                timed = timings((await speedometer.communicate())[0].decode())
            finally:
                if speedometer is not None and speedometer.returncode is None:
                    speedometer.kill()
                    await speedometer.wait()
                for proc, pid in zip(procs, [app_pid(p.pid) if profile else p.pid for p in procs], strict=True):
                    if profile:
                        os.kill(pid, 15)  # py-spy writes its profile when the app exits
                    else:
                        proc.terminate()
                await asyncio.gather(*(proc.wait() for proc in procs))
                for log in logs:
                    log.close()
        floors += await floor_ms(floor_runs, database, lanes, latency_s, count_sql)
        load_429 = Counter(slack.answered_429) - setup_429
        refused, twice = sum(load_429.values()), duplicates(slack)
        methods = Counter(c.method for c in slack.calls[slack_before:])
        purposes = Counter(carried(c.method, c.params) for c in slack.calls[slack_before:])
        sent = {method: [c.params for c in slack.calls[slack_before:] if c.method == method]
                for method in ("chat.postMessage", "chat.update")}
        # Slack's calls run from the load's start to its last post: over every round's model calls, not round 1's.
        method_calls = model.request_count - calls_before
        lifetime_calls = model.request_count  # the app's whole life, as its profile covers it
    sqlite = "sqlite" in env["DATABASE_URL"]
    p99 = statistics.quantiles(health, n=100)[98] if len(health) >= 2 else float("nan")
    slowest = max(durations) if durations else float("nan")
    extra_calls = sum(k - 1 for k in made.values())
    print(f"N {n}, {replicas} replica(s), {per_workspace} per workspace, model latency {latency_s:g} s, Slack's "
          f"limits and the app's rate budget on, database {'SQLite' if sqlite else 'PG'}")
    print(f"lone round 1: {lone:.2f} s")
    print(f"finished round 1: {len(durations)} of {n}; median {statistics.median(durations):.2f} s, "
          f"slowest {slowest:.2f} s")
    print(f"peak RSS: {rss:.0f} MB")
    print(f"/healthz p99 during the load: {p99:.1f} ms ({len(health)} probes)")
    per_call_ms = cpu_used * 1000 / max(calls, 1)
    print(f"process CPU per model call in round 1: {per_call_ms:.1f} ms ({calls} calls, {cpu_used:.1f} s; "
          f"{len(health)} /healthz probes at {per_probe_s * 1000:.2f} ms each taken off)")
    whole_ms = float("nan")
    if whole_cpu is not None:
        whole_ms = whole_cpu[0] * 1000 / max(whole_cpu[1], 1)
        print(f"process CPU per model call over whole discussions ({ROUNDS} round(s), closings and charts included, "
              f"from the load's start until the last post was out): {whole_ms:.1f} ms ({whole_cpu[1]} calls, "
              f"{whole_cpu[0]:.1f} s)")
    else:
        print("whole discussions: not every discussion finished, so no CPU a model call over them", file=sys.stderr)
    # Charts are drawn off the event loop (a thread): the threads beside the loop are theirs (the app's SQL runs
    # on the loop, SQLite's inline and asyncpg alike), judged against the loop's CPU for the same discussions.
    loop_s = whole_threads.get("event loop", 0.0) - probes_s
    charts_s = whole_threads.get("other threads", 0.0)
    charts_ratio = charts_s / loop_s if whole_cpu is not None and loop_s > 0 else float("nan")
    if whole_cpu is not None:
        print(f"off the event loop (the charts' threads) over whole discussions: {charts_s:.2f} s of CPU, "
              f"{charts_s * 1000 / n:.0f} ms a discussion; {charts_ratio:.3f}x the event loop's {loop_s:.1f} s")
    print("  by thread: " + ", ".join(f"{name} {used * 1000 / max(calls, 1):.1f} ms" for name, used in
                                      sorted(threads.items(), key=lambda kv: -kv[1]) if used > 0))
    speeds = timed_in(timed, windows.get("round 1"))
    speed = statistics.median(speeds) if speeds else float("nan")
    print(f"this machine: a fixed loop of plain Python took {speed:.0f} ms (median of {len(speeds)} timings, "
          f"{min(speeds, default=float('nan')):.0f}-{max(speeds, default=float('nan')):.0f}) in another process "
          f"during the load; a model call cost {per_call_ms / speed:.3f} of it")
    cores = os.cpu_count() or 1
    print(f"during the load ({load_s:.0f} s): the app used {cpu_used / load_s:.0%} of a core, the fakes and probes "
          f"in this process {fakes_cpu / load_s:.0%}, PostgreSQL {postgres_cpu / load_s:.0%}; the machine's "
          f"{cores} cores were busy {busy / load_s:.0%} of a core in all (the rest: "
          f"{max(0.0, busy - cpu_used - fakes_cpu - postgres_cpu) / load_s:.0%}), and its host took "
          f"{stolen / load_s:.0%} of a core for others")
    floor = statistics.median(floors) if floors else float("nan")
    if floors:
        print(f"the libraries' floor (bench/library_floor.py, {floor_runs} runs before the load and {floor_runs} "
              f"after{', pinned to core 0 as the app' if app_core else ', not pinned'}): {floor:.2f} ms a model call "
              f"(median; runs {', '.join(f'{f:.2f}' for f in floors)}); the app's CPU a model call is "
              f"{whole_ms / floor:.2f}x it over whole discussions, {per_call_ms / floor:.2f}x in round 1")
    statements, transactions = sql["statements"] / max(calls, 1), sql["transactions"] / max(calls, 1)
    if count_sql:
        print(f"SQL a model call in round 1: {statements:.2f} statements, {transactions:.2f} transactions (each "
              "autocommit statement's connection counts as one)")
        # Judged over whole discussions when they were measured: round 1's window ends while steps are under way.
        judged_calls, judged = sql_whole if sql_whole is not None else (calls, sql)
        whole_statements = judged["statements"] / max(judged_calls, 1)
        whole_transactions = judged["transactions"] / max(judged_calls, 1)
        if sql_whole is not None:
            print(f"SQL a model call over the {ROUNDS} rounds, from the load's start until the last post was out: "
                  f"{whole_statements:.2f} statements, {whole_transactions:.2f} transactions ({judged_calls} calls)")
        shapes = Counter({k.removeprefix(SHAPE): v for k, v in judged.items() if k.startswith(SHAPE)})
        for shape, runs in shapes.most_common(TOP_STATEMENTS):
            print(f"  {runs / max(judged_calls, 1):5.2f}  {shape}")
        opens = Counter({k.removeprefix(OPENS): v for k, v in judged.items() if k.startswith(OPENS)})
        print("the transactions, by their first statement:")
        for shape, runs in opens.most_common(TOP_STATEMENTS // 2):
            print(f"  {runs / max(judged_calls, 1):5.2f}  {shape}")
    slack_calls = sum(methods.values()) / max(method_calls, 1)
    print(f"Slack calls a model call ({method_calls} calls, all rounds): {slack_calls:.2f}: " + ", ".join(
        f"{m} {k / max(method_calls, 1):.2f}" for m, k in methods.most_common()))
    print("  by what they carry: " + ", ".join(f"{m} {k / max(method_calls, 1):.2f}" for m, k in
                                              purposes.most_common()))
    if profile and replicas == 1:
        print("\n".join(profile_split.lines(profile_split.split(Path(profile)), lifetime_calls)))
    # The floor is fair only while it sends what the load sends: both sizes, side by side.
    prompt_kb, post_kb, edit_kb = sizes()
    print(f"model requests during the load: {mean_kb(model.requests[calls_before:]):.1f} KB of JSON on average; "
          f"Slack's new messages {mean_kb(sent['chat.postMessage']):.2f} KB, edits {mean_kb(sent['chat.update']):.2f} "
          f"KB; the floor sends {prompt_kb:.1f} KB, {post_kb:.2f} KB and {edit_kb:.2f} KB")
    asked = f"model requests made twice: {extra_calls}"
    print(f"people's votes on the load's polls: {sum(votes.values())} ({dict(votes)} by HTTP status)")
    print(f"Slack answered 429 {refused} times during the load ({dict(load_429)}), and {sum(setup_429.values())} "
          f"times before it ({dict(setup_429)}: the bench's setup, every workspace's OAuth install at once, and the "
          f"lone round); posts held twice: {twice}; {asked}")
    growth: list[Figure] = []
    if ROUNDS > 1:
        if last is None:
            print(f"round {ROUNDS}: not every discussion finished it", file=sys.stderr)
            growth = [Figure("last_round_cpu_ratio", float("nan"), MAX_GROWTH)]
        else:
            late_ms = last[0] * 1000 / max(last[1], 1)
            print(f"round {ROUNDS} (from the first discussion finishing round {ROUNDS - 1} until every one finished "
                  f"round {ROUNDS}): "
                  f"{late_ms:.1f} ms of CPU a model call ({last[1]} calls), {late_ms / per_call_ms:.2f}x round 1's")
            # The machine's speed in each window, from the same fixed loop: a ratio that moved with it is the
            # machine's, not the app's (judged as measured all the same).
            late_speeds = timed_in(timed, windows.get("last"))
            if speeds and late_speeds:
                late_speed = statistics.median(late_speeds)
                print(f"  the fixed loop took {speed:.0f} ms in round 1 ({len(speeds)} timings) and {late_speed:.0f} "
                      f"ms in round {ROUNDS} ({len(late_speeds)}): in those loops, a model call of round {ROUNDS} "
                      f"cost {(late_ms / late_speed) / (per_call_ms / speed):.2f}x one of round 1")
            growth = [Figure("last_round_cpu_ratio", late_ms / per_call_ms, MAX_GROWTH)]
            if count_sql:
                late = last[2]["statements"] / max(last[1], 1)
                print(f"  and {late:.2f} statements, {last[2]['transactions'] / max(last[1], 1):.2f} transactions a "
                      f"model call, {late / max(statements, 1e-9):.2f}x round 1's statements")
                growth.append(Figure("last_round_statements_ratio", late / max(statements, 1e-9), MAX_GROWTH))
    # The targets: ≤ 1.3× up to 100 discussions in one process and ≤ 1.5× beyond; ≤ 1.3× across replicas (they
    # share the load). CPU is judged only against the floor measured in this run: this machine's speed changes
    # between sessions, so no figure in milliseconds travels.
    ratio_target = 1.3 if n <= 100 or replicas > 1 else 1.5
    # What the ratio target leaves to spend: the load must end within ratio_target × the lone round, and in that
    # time each app's event loop has at most one core (less when the apps outnumber the cores) for its share of the
    # calls, and all the processes here (apps, fakes, database) the machine's cores.
    within = ratio_target * lone
    print(f"at the ratio target ({ratio_target:g} × the lone round: {within:.1f} s), one process has "
          f"{within * replicas * 1000 / max(calls, 1):.1f} ms of one core a model call, and the machine's "
          f"{cores} cores {within * cores:.1f} s in all; this load used {busy:.1f} s in all")
    if replicas > 1:
        left = max(0.0, busy - fakes_cpu - postgres_cpu)
        print(f"what the {cores} cores left the {replicas} apps while the fakes and PostgreSQL ran: {left:.1f} s of "
              f"CPU, {left / load_s / replicas:.0%} of a core each; the apps used {cpu_used:.1f} s "
              f"({cpu_used / load_s / replicas:.0%} of a core each). No wall-clock ratio is set for that share.")
    room = no_room(floor if floors else None, calls, replicas, cores, within)
    if floors:
        fits = f"an app at {MAX_FLOOR_RATIO:g}x the floor fits its calls in the time the ratio target leaves it"
        print(f"the floor {'leaves no' if room else 'leaves'} room for the round's ratio: {room or fits}")
    figures = [Figure("slowest_round_ratio", slowest / lone, ratio_target, unjudged=room),
               Figure("peak_rss", rss, 300.0, "MB"), Figure("healthz_p99", p99, 50.0, "ms"),
               Figure("slack_429s", refused, 0), Figure("posts_twice", twice, 0),
               Figure("turns_twice", extra_calls, 0), *growth,
               Figure("slack_calls_per_call", slack_calls, MAX_SLACK_CALLS),
               Figure("charts_cpu_ratio", charts_ratio, MAX_CHARTS),
               *([Figure("floor_ratio", whole_ms / floor, MAX_FLOOR_RATIO)] if floors else []),
               *([Figure("sql_statements_per_call", whole_statements, MAX_STATEMENTS),
                  Figure("sql_transactions_per_call", whole_transactions, MAX_TRANSACTIONS)] if count_sql else [])]
    return report(figures, targets, ok=len(durations) == n)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", type=int, default=100, help="concurrent discussions")
    parser.add_argument("--per-workspace", type=int, default=1, help="discussions in each workspace")
    parser.add_argument("--replicas", type=int, default=1, help="app processes on one PostgreSQL database")
    parser.add_argument("--latency", type=float, default=1.0, help="fake model latency in seconds")
    parser.add_argument("--within", type=float, default=600.0, help="give up on round 1 after this many seconds")
    parser.add_argument("--profile", default="", help="run the app under py-spy and write a speedscope profile here")
    parser.add_argument("--count-sql", action="store_true",
                        help="count the app's SQL statements and transactions during the load, and list the statements "
                        "run most (bench/sql_count.py)")
    parser.add_argument("--time-scale", type=float, default=TIME_SCALE,
                        help="Slack's limits and the app's pacing this many times faster: a quick run, not a measure")
    parser.add_argument("--rounds", type=int, default=ROUNDS,
                        help="rounds each discussion of the load runs (round 1 is timed; the last is compared with it)")
    parser.add_argument("--delta-gap", type=float, default=GAP_S, help="seconds between the model's deltas")
    parser.add_argument("--seed", type=int, default=SEED, help="the generator of the discussions and answers")
    parser.add_argument("--floor-calls", type=int, default=FLOOR_CALLS, help="model calls in each floor run")
    parser.add_argument("--floor-runs", type=int, default=3,
                        help="runs of bench/library_floor.py before the load and as many after (0: none, no ratio)")
    add_target_flag(parser)
    args = parser.parse_args()
    TIME_SCALE = args.time_scale
    ROUNDS = args.rounds
    GAP_S, SEED, FLOOR_CALLS = args.delta_gap, args.seed, args.floor_calls
    profile = os.path.abspath(args.profile) if args.profile else ""
    raise SystemExit(asyncio.run(main(args.n, args.per_workspace, args.replicas, args.latency, args.within, profile,
                                      overrides(args.target), args.count_sql, args.floor_runs)))
