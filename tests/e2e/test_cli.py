"""The command line as an operator uses it, in processes of its own: JSON alone on stdout, files written (its
refusals, and what it says rather than how its output is kept apart, are run in process: typer's runner, as in
tests/test_cli_errors.py)."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from bot.__main__ import cli

# One finished console discussion is shared by the tests here, each on a copy of its database: a whole discussion in
# a process of its own costs seconds. Under xdist the workers share it through the run's temporary folder (made once,
# under a lock), since xdist_group does not keep them on one worker with this pytest.

TOPIC = "Should we adopt trunk-based development?"

def run(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "COUNCIL_", "DATABASE_URL"))}
    env["DATABASE_URL"] = f"sqlite:///{tmp / 'council.db'}"
    return subprocess.run([sys.executable, "-m", "bot", *args], cwd=tmp, env=env, capture_output=True, text=True,
                          timeout=120)


def here(tmp: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Result:
    """The same command in this process: no start-up to pay, for what does not need a process of its own."""
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "COUNCIL_", "DATABASE_URL")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp / 'council.db'}")
    monkeypatch.chdir(tmp)
    return CliRunner().invoke(cli, list(args))


def latest_id(tmp: Path) -> str:
    with closing(sqlite3.connect(tmp / "council.db")) as conn:
        return str(conn.execute("SELECT id FROM discussions").fetchone()[0])


@dataclass(frozen=True)
class Finished:
    folder: Path  # where the console ran: its database, and the files it wrote when the discussion ended
    stdout: str


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Finished:
    """One console discussion run to its end with claims checked, as an operator runs it."""
    if worker_id == "master":  # not under xdist: this process is the only one
        return console(tmp_path_factory.mktemp("console"))
    folder = tmp_path_factory.getbasetemp().parent / "console"  # the run's folder, above each worker's
    folder.mkdir(exist_ok=True)
    with (folder.parent / "console.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        said = folder / "stdout.txt"
        if not said.exists():
            said.write_text(console(folder).stdout)
        return Finished(folder, said.read_text())


def console(folder: Path) -> Finished:
    done = run(folder, "console", TOPIC, "--no-input", "--check")
    assert done.returncode == 0, done.stderr
    return Finished(folder, done.stdout)


@pytest.fixture
def workdir(finished: Finished, tmp_path: Path) -> Path:
    """The finished discussion's database, copied whole (its write-ahead log included) into this test's folder."""
    with closing(sqlite3.connect(finished.folder / "council.db")) as src, \
            closing(sqlite3.connect(tmp_path / "council.db")) as dst:
        src.backup(dst)
    return tmp_path


def test_a_full_round_then_list_and_export_as_machines_read_them(finished: Finished, workdir: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    assert "offline model" in finished.stdout
    listed = run(workdir, "list", "--format", "json")
    (row,) = json.loads(listed.stdout)
    assert row["status"] == "done"
    exported = run(workdir, "export", "--latest", "--format", "json")
    doc = json.loads(exported.stdout)  # the JSON document alone on stdout
    assert doc["discussion"]["id"] == row["id"] and len(doc["personas"]) >= 7
    assert doc["usage"]["input_tokens"] > 0
    md = run(workdir, "export", row["id"], "--format", "md")
    assert md.stdout.startswith("# Synthesis:")
    for name in ("artifacts/synthesis.md", "artifacts/open-questions.md", "context/summary.md", "transcript.json"):
        assert (finished.folder / "exports" / row["id"] / name).exists()  # the console's own, as it ended
    folder = workdir / "filed"
    filed = here(workdir, monkeypatch, "export", row["id"], "--format", "dir", "--out", str(folder))  # files only
    assert filed.exit_code == 0, filed.output
    assert json.loads((folder / "manifest.json").read_text())["id"] == row["id"]
    assert len(list((folder / "personas").glob("*.json"))) == len(doc["personas"])
    assert json.loads((folder / "rounds" / "001.json").read_text())["roundId"] == 1
    for name in ("synthesis.json", "synthesis.md", "open-questions.md", "stances.png"):
        assert (folder / "artifacts" / name).exists()
    assert "](stances.png)" in (folder / "artifacts" / "synthesis.md").read_text()
    assert (folder / "context" / "summary.md").read_text().startswith("# Where it stands:")
    # Without --out the folder is the console's own: the same files, each once (no synthesis.md beside artifacts/).
    shutil.copytree(finished.folder / "exports" / row["id"], workdir / "exports" / row["id"])
    again = here(workdir, monkeypatch, "export", row["id"], "--format", "dir")
    assert again.exit_code == 0, again.output
    filed_twice = [str(p) for p in (workdir / "exports" / row["id"]).rglob("synthesis.md")]
    assert filed_twice == [str(workdir / "exports" / row["id"] / "artifacts" / "synthesis.md")]


def test_export_html_is_the_page_as_one_file_that_reads_offline(finished: Finished, workdir: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    assert "could not check" in finished.stdout  # the offline model has no web search, and says so
    discussion_id = latest_id(workdir)
    out = workdir / "saved"
    page = run(workdir, "export", discussion_id, "--format", "html", "--out", str(out))
    assert page.returncode == 0, page.stderr
    html = (out / "discussion.html").read_text(encoding="utf-8")
    assert html == page.stdout and html.lstrip().lower().startswith("<!doctype html>")
    assert TOPIC in html and "Final synthesis" in html
    assert "Fact-checker" in html and "<style" in html
    # Nothing to fetch: no scripts, no stylesheets or images by URL; links only to the sources people click.
    assert "<script" not in html and "<link" not in html and not re.search(r"src=[\"']?https?:", html)
    assert "url(" not in html
    bad = here(workdir, monkeypatch, "export", discussion_id, "--format", "pdf")
    assert bad.exit_code != 0 and "json, md, html or dir" in bad.stderr


def test_a_decision_is_found_and_opens_the_next_console_discussion(workdir: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    found = run(workdir, "decisions", "trunk", "--format", "json")
    (record,) = json.loads(found.stdout)
    assert record["topic"] == TOPIC and record["flow"] == "moderated"
    assert "No decisions matching 'kubernetes'" in here(workdir, monkeypatch, "decisions", "kubernetes").stdout
    again = here(workdir, monkeypatch, "console", "Trunk-based development: time to revisit?", "--no-input")
    assert again.exit_code == 0 and "Earlier here" in again.stdout
    assert TOPIC in again.stdout
    off = here(workdir, monkeypatch, "console", "Trunk-based development, third time?", "--no-input", "--no-memory")
    assert off.exit_code == 0 and "Earlier here" not in off.stdout
