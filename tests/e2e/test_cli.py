"""The command line as an operator uses it, in processes of its own: JSON alone on stdout, files written (its
refusals are tested in process: tests/test_cli_errors.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path


def run(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "COUNCIL_", "DATABASE_URL"))}
    env["DATABASE_URL"] = f"sqlite:///{tmp / 'council.db'}"
    return subprocess.run([sys.executable, "-m", "bot", *args], cwd=tmp, env=env, capture_output=True, text=True,
                          timeout=120)


def test_a_full_round_then_list_and_export_as_machines_read_them(tmp_path: Path) -> None:
    done = run(tmp_path, "console", "Should we adopt trunk-based development?", "--no-input")
    assert done.returncode == 0, done.stderr
    assert "offline model" in done.stdout
    listed = run(tmp_path, "list", "--format", "json")
    (row,) = json.loads(listed.stdout)
    assert row["status"] == "done"
    exported = run(tmp_path, "export", "--latest", "--format", "json")
    doc = json.loads(exported.stdout)  # the JSON document alone on stdout
    assert doc["discussion"]["id"] == row["id"] and len(doc["personas"]) >= 7
    assert doc["usage"]["input_tokens"] > 0
    md = run(tmp_path, "export", row["id"], "--format", "md")
    assert md.stdout.startswith("# Synthesis:")
    for name in ("synthesis.md", "open-questions.md", "transcript.json"):
        assert (tmp_path / "exports" / row["id"] / name).exists()
    folder = tmp_path / "filed"
    filed = run(tmp_path, "export", row["id"], "--format", "dir", "--out", str(folder))
    assert filed.returncode == 0, filed.stderr
    assert json.loads((folder / "manifest.json").read_text())["id"] == row["id"]
    assert len(list((folder / "personas").glob("*.json"))) == len(doc["personas"])
    assert json.loads((folder / "rounds" / "001.json").read_text())["roundId"] == 1
    for name in ("synthesis.json", "synthesis.md", "open-questions.md"):
        assert (folder / "artifacts" / name).exists()


def test_export_html_is_the_page_as_one_file_that_reads_offline(tmp_path: Path) -> None:
    done = run(tmp_path, "console", "Should we adopt trunk-based development?", "--no-input", "--check")
    assert done.returncode == 0, done.stderr
    assert "could not check" in done.stdout  # the offline model has no web search, and says so
    (row,) = json.loads(run(tmp_path, "list", "--format", "json").stdout)
    out = tmp_path / "saved"
    page = run(tmp_path, "export", row["id"], "--format", "html", "--out", str(out))
    assert page.returncode == 0, page.stderr
    html = (out / "discussion.html").read_text(encoding="utf-8")
    assert html == page.stdout and html.lstrip().lower().startswith("<!doctype html>")
    assert "Should we adopt trunk-based development?" in html and "Final synthesis" in html
    assert "Fact-checker" in html and "<style" in html
    # Nothing to fetch: no scripts, no stylesheets or images by URL; links only to the sources people click.
    assert "<script" not in html and "<link" not in html and not re.search(r"src=[\"']?https?:", html)
    assert "url(" not in html
    bad = run(tmp_path, "export", row["id"], "--format", "pdf")
    assert bad.returncode != 0 and "json, md, html or dir" in bad.stderr


def test_a_decision_is_found_and_opens_the_next_console_discussion(tmp_path: Path) -> None:
    first = run(tmp_path, "console", "Should we adopt trunk-based development?", "--no-input")
    assert first.returncode == 0, first.stderr
    found = run(tmp_path, "decisions", "trunk", "--format", "json")
    (record,) = json.loads(found.stdout)
    assert record["topic"] == "Should we adopt trunk-based development?" and record["flow"] == "moderated"
    assert "No decisions matching 'kubernetes'" in run(tmp_path, "decisions", "kubernetes").stdout
    again = run(tmp_path, "console", "Trunk-based development: time to revisit?", "--no-input")
    assert again.returncode == 0 and "Earlier here" in again.stdout
    assert "Should we adopt trunk-based development?" in again.stdout
    off = run(tmp_path, "console", "Trunk-based development, third time?", "--no-input", "--no-memory")
    assert off.returncode == 0 and "Earlier here" not in off.stdout
