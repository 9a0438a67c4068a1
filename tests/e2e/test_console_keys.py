"""The console's keys on a pseudo-terminal: Ctrl-C stops and resumes, numbers answer numbered prompts, /help,
and a topic with brackets."""

from __future__ import annotations

import re
import signal
from pathlib import Path

import pytest

from tests.e2e.test_console_speaks import Terminal

pytestmark = pytest.mark.e2e
RESUME = re.compile(r"Resume with: python -m bot console --resume ([0-9a-f]+)")


def ctrl_c(term: Terminal) -> None:
    """What the terminal does with Ctrl-C (ISIG): SIGINT to the program in the foreground."""
    term.child.kill(signal.SIGINT)


def test_ctrl_c_stops_at_a_safe_point_exports_and_the_resume_finishes(tmp_path: Path) -> None:
    # Paced, so that Ctrl-C lands while the round is being written, not after it ended.
    term = Terminal(tmp_path, "--rounds", "1", "--pace", "0.5")
    term.wait("is thinking")
    ctrl_c(term)
    term.wait("Stopping at the next safe point")
    screen = term.finish(status=130)
    stopped = RESUME.search(screen)
    assert stopped is not None, screen[-2000:]
    did = stopped.group(1)
    assert f"Stopped. Exported to exports/{did}/." in screen
    assert "paused the discussion" in screen and "Resume summary" in screen, "it stopped after a turn, saved"
    for name in ("artifacts/synthesis.md", "artifacts/open-questions.md", "transcript.json"):
        assert (tmp_path / "exports" / did / name).is_file(), name
    assert screen.strip().endswith(f"--resume {did}"), "the resume line is the last word"

    again = Terminal(tmp_path, "--resume", did, topic="")
    resumed = again.finish()
    assert "resumed the discussion" in resumed and "Done." in resumed
    assert "Flow: moderated" not in resumed, "the header panel printed again after the resume"


def test_a_second_ctrl_c_quits_at_once_and_still_says_how_to_resume(tmp_path: Path) -> None:
    # Paced slowly: the second Ctrl-C must land before the turn the first one waits for ends (at 2 s a step a
    # loaded machine let the pause take effect first, and the resume then had no pause to call off).
    term = Terminal(tmp_path, "--rounds", "1", "--pace", "8")
    term.wait("is thinking")
    ctrl_c(term)
    term.wait("Stopping at the next safe point")
    ctrl_c(term)
    screen = term.finish(status=130)
    stopped = RESUME.search(screen)
    assert stopped is not None, screen[-2000:]
    assert "Done." not in screen and screen.strip().endswith(stopped.group(0)), screen[-1500:]
    again = Terminal(tmp_path, "--resume", stopped.group(1), topic="")
    resumed = again.finish()
    # The pause the first Ctrl-C asked for is called off: the resume goes on to the end, not into a pause.
    assert "called off the pause" in resumed and "Done." in resumed, resumed[-2000:]


def test_numbers_at_each_numbered_prompt_and_help(tmp_path: Path) -> None:
    term = Terminal(tmp_path, "--confirm")
    term.wait(r"Type 1-2")
    term.type("/help")
    term.wait(r"/vote POLL N")
    term.type("/frobnicate")
    term.wait("There is no command /frobnicate")
    term.type("7")
    term.wait("There is no choice 7: type a number from 1 to 2")
    term.type("2")  # Modify roster
    term.wait(r"Type 1-4")
    term.type("3")  # add an expert
    term.wait("new expert's name")
    term.type("Grace [compilers] Hopper")
    term.wait("field")
    term.type("Compilers")
    term.wait("Added Grace")
    term.wait(r"Type 1-4")
    term.type("4")
    term.wait(r"Type 1-2")
    term.type("1")
    term.wait(r"Type 1-5 to choose")
    term.type("9")
    term.wait("There is no choice 9: type a number from 1 to 5")
    term.wait(r"Type 1-5 to choose")
    term.type("4")  # synthesize
    term.wait("Vote on")
    term.type("8")
    term.wait("Please type a number from 1 to")
    term.type("1")
    term.wait("press Enter to leave it open")
    term.type("")  # the poll stays open until its deadline
    screen = term.finish()
    assert "Done." in screen and "Grace [compilers] Hopper" in screen
    folder = re.search(r"Exported to (\S+)/", screen)
    assert folder is not None
    questions = (tmp_path / folder.group(1) / "artifacts" / "open-questions.md").read_text()
    for typed in ("2", "7", "9", "8", "4"):
        assert f"dana: {typed}\n" not in questions, f"the number {typed} became a message to the council"
    transcript = (tmp_path / folder.group(1) / "transcript.json").read_text()
    assert '"author_name": "dana"' not in transcript, "nothing typed here was a message"


def test_a_topic_with_brackets_is_shown_as_typed(tmp_path: Path) -> None:
    topic = "Should we split [core] into [core/api] and [core/db]?"
    term = Terminal(tmp_path, "--rounds", "1", "--no-input", topic=topic)
    screen = term.finish()
    assert f"Council: {topic}" in screen
    assert f"Round 1: {topic}" in screen
