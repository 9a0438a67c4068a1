"""The console as a person meets it: each flow typed into on a pseudo-terminal, the screen read as shown."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest
from typer.testing import CliRunner

from bot.__main__ import cli

pytestmark = pytest.mark.e2e
TOPIC = "Should we move to trunk-based development?"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


def environment(folder: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "COUNCIL_", "DATABASE_URL"))}
    # The offline model unpaced (a terminal gets a person's pace by default): these tests read what is shown.
    return env | {"DATABASE_URL": f"sqlite:///{folder / 'council.db'}", "COLUMNS": "110", "TERM": "xterm",
                  "USER": "dana", "LOGNAME": "dana", "COUNCIL_OFFLINE_DELAY_S": "0"}


class Terminal:
    """One `python -m bot console …` on a pseudo-terminal: type lines, wait for words, read the whole screen."""

    def __init__(self, folder: Path, *args: str, topic: str = TOPIC) -> None:
        self.child = pexpect.spawn(sys.executable, ["-m", "bot", "console", *([topic] if topic else []), *args],
                                   cwd=str(folder),
                                   env=environment(folder), encoding="utf-8", timeout=60, dimensions=(60, 110))
        self.seen = ""

    def wait(self, pattern: str) -> None:
        self.child.expect(pattern)
        self.seen += (self.child.before or "") + str(self.child.after)

    def type(self, line: str) -> None:
        self.child.sendline(line)

    def finish(self, status: int = 0) -> str:
        self.child.expect(pexpect.EOF, timeout=120)
        self.seen += self.child.before or ""
        self.child.close()
        assert self.child.exitstatus == status, self.screen[-3000:]
        return self.screen

    @property
    def screen(self) -> str:
        return ANSI.sub("", self.seen)


def test_a_moderated_session_speaks_like_a_terminal_program(tmp_path: Path) -> None:
    term = Terminal(tmp_path, "--confirm")
    term.wait(r"Type 1-2 \(Enter: 1, start with this council\)")
    term.type("")
    term.wait("is thinking")
    term.type("What about the release cadence?")
    term.type("And who reviews the merges?")  # within the answer interval: paced, and told so
    term.wait(r"Type 1-5 to choose")
    term.type("/vote 1 2")  # the round's poll, as its panel says
    term.wait("Your vote: ")
    term.wait(r"Type 1-5 to choose")
    term.type("2")  # Different topic: the console asks for it
    term.wait("Type the topic for the next round")
    term.type("Who pays for the pipeline?")
    term.wait(r"Type 1-5 to choose")
    term.type("/vote 1 1")  # round 1's poll closed when round 2 began
    term.wait("This poll is closed")
    term.wait(r"Type 1-5 to choose")
    term.type("/vote 9 1")  # no such poll
    term.wait("find that poll")
    term.wait(r"Type 1-5 to choose")
    term.type("4")
    term.wait("Vote on")
    term.type("1")
    term.wait("The poll stays open until")
    term.type("")  # left open: it closes at its deadline, or when its starter closes it
    screen = term.finish()
    assert "Done." in screen
    # Markdown is rendered: no asterisks shown, a bold heading on a line of its own.
    assert "**" not in screen and "Round 1 is complete." in screen
    assert f"Round 1: {TOPIC} Let's look" in screen, "the topic's own question mark ends it: no '?.'"
    # The terminal's own words, and the person's own name.
    for foreign in ("Click", "thread", "button", "You:", "Thanks, You", "Start or Modify roster"):
        assert foreign not in screen, foreign
    assert "Noted: the council answered you a moment ago" in screen, "the second message got no visible word"
    # The topic typed is the next round's; the choice is told before the round it starts.
    chose = screen.index("dana chose Different topic: Who pays for the pipeline?")
    assert "pipeline?." not in screen, "the question mark ends the notice"
    assert chose < screen.index("Running · Round 2")
    # Each poll closes once, never below the poll that followed it: round 1's as round 2 began; round 2's closes
    # at the end, after the final poll opened, so the terminal leaves its tally to the export.
    assert screen.count("Poll closed: Which option should the team pursue?") == 1
    assert "Poll closed" not in screen[screen.index("Vote on"):]
    first = screen[screen.index("Poll closed: Which option should the team pursue?"):]
    # The round's poll offers the question's options with their ids: the roster's answers, then the proposals.
    assert "2 Stay as we are [O2] — 1 vote (dana)" in first[:first.index("╰")]
    assert "Your vote: Stay as we are" in screen
    # The closing right after round 2's synthesis points to its table; the vote edits one line, not the post.
    assert screen.count("Stances after round 2") == 1 and "Stances as after round 2, above." in screen
    assert screen.count("Final synthesis. After deliberating") == 1, "the closing printed again after the vote"


def test_operator_commands_print_their_result_without_library_logs(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # (That the operator is not held to the per-person start limit: tests/test_console_operator.py, in process.)
    env = environment(tmp_path)
    # The decision to find is made in process (typer's runner); the commands whose logs are read run on their own,
    # each with the logging its start sets up.
    for name in [n for n in os.environ if n not in env]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(cli, ["console", TOPIC, "--rounds", "1", "--no-input"])
    assert done.exit_code == 0, done.output[-2000:]
    assert "Done." in done.stdout
    found = subprocess.run([sys.executable, "-m", "bot", "decisions", "trunk"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=60)
    assert found.returncode == 0 and TOPIC in found.stdout
    assert "INFO" not in found.stderr and "alembic" not in found.stderr, found.stderr
    asked = subprocess.run([sys.executable, "-m", "bot", "decisions", "trunk"], cwd=tmp_path,
                           env=env | {"COUNCIL_LOG_LEVEL": "INFO"}, capture_output=True, text=True, timeout=60)
    assert "INFO" in asked.stderr, "asked for, the logs are there"


def test_a_meeting_is_ranked_at_the_terminal(tmp_path: Path) -> None:
    term = Terminal(tmp_path, "--flow", "meeting", "--rounds", "2")
    for place in (1, 2, 3):
        term.wait(f"Vote on “Your #{place} priority”")
        term.type(str(place))
    term.wait("The poll stays open until")
    term.type("/close")  # the starter closes the ranking: the verdict is restated final beside the owners'
    screen = term.finish()
    assert "Done." in screen
    assert "polls below" not in screen
    doubled = re.search(r"(\w+ \w+): [^()\n│]*\(\1\)", screen)
    assert doubled is None, f"an owner named twice in one item: {doubled and doubled.group(0)}"
    assert "the council's positions" not in screen, "the ranking offered no vote"
    # A vote changes the recommendation's verdict: the terminal shows the changed line, not the whole post again
    # (its stance table included) right below the poll.
    assert screen.count("Council Recommendation") == 1, "the recommendation printed again after a vote"
    voted = screen[screen.index("Your vote:"):screen.index("Vote on “Your #2 priority”")]
    assert "Verdict:" in voted and "people: " in voted and "1 of 1" in voted, voted
    after = screen[screen.index("Your #3 priority"):]
    # The places close together: no three "Poll closed" panels in a row, one comparison of people and owners.
    assert "The people's ranking beside the owners'" in after, "the ranking was not closed with it"
    assert "Poll closed" not in after, after
    # While people rank, the verdict says so; once closed, it is restated without it.
    assert "so far: people can vote until" in voted
    final = after[after.index("Final verdict:"):]
    assert "so far" not in final and "1 of 1" in final.split("people:")[1], final


def test_an_open_floor_draws_its_header_once_and_its_closing_points_to_the_table(tmp_path: Path) -> None:
    term = Terminal(tmp_path, "--flow", "open", "--rounds", "1", "--no-input")
    screen = term.finish()
    assert "Done." in screen
    assert screen.count(f"Council: {TOPIC}") == 2, "the header: a line while seating, then its panel, once"
    assert screen.count("Flow: open floor") == 1
    assert "Contrarian" not in screen and "Experts'" not in screen, "the floor has no contrarian and no experts"


def test_a_council_hears_the_person_before_its_verdict_and_ends_with_it(tmp_path: Path) -> None:
    # Paced, so the council is still speaking when the person types: unpaced, a quiet machine can finish the round
    # before the line is read, and it is read as a vote instead.
    term = Terminal(tmp_path, "--flow", "council", "--rounds", "1", "--pace", "0.5")
    term.wait("is thinking")
    term.type("What does this cost us?")
    term.wait("Vote on")
    term.type("")  # no vote: the poll is left as it is
    term.wait("The poll stays open until")
    term.type("")
    screen = term.finish()
    assert "Done." in screen and "**" not in screen
    assert "Noted" in screen, "the message got no visible word"
    verdict = screen.index("Referee's verdict")
    # Answered by name before the verdict, or (typed while it was written, or after) among its open questions.
    answered = "dana" in screen[screen.index("Noted"):verdict]
    folder = re.search(r"Exported to (\S+)/", screen)
    assert folder is not None
    questions = (tmp_path / folder.group(1) / "artifacts" / "open-questions.md").read_text()
    filed = "- dana: What does this cost us?" in questions
    assert answered != filed, screen[verdict - 1500:]
    assert screen.count("Flow: council") == 1, "the header panel is drawn once"
    assert screen.count("Stances after round 1") == 1, "the stance table shown once"
    ending = [line for line in screen[screen.index("✅ Finished"):].strip().splitlines()
              if not line.startswith(("> ", "›", "📊 Chart saved: ",  # the prompts, the export's charts,
                                      "Noted: the council has finished"))]  # and a line typed after the end
    assert len(ending) == 2 and ending[1].startswith("Done. Exported to"), "nothing after the ending but the prompts"


def test_a_council_vote_at_the_terminal_is_counted_once_and_closed_final(tmp_path: Path) -> None:
    term = Terminal(tmp_path, "--flow", "council", "--rounds", "1")
    term.wait(r"Vote on “Where do you stand on the council's question\?” \(poll (\d+)\): type a number 1-(\d)")
    term.type("9")  # no such option
    term.wait("Please type a number from 1 to")
    term.type("1")
    term.wait("Your vote: ")
    term.wait("The poll stays open until")
    term.type("later")  # neither /close nor Enter
    term.wait("Type /close to close the poll now")
    term.type("/close")
    screen = term.finish()
    voted = screen[screen.index("Your vote: "):screen.index("The poll stays open until")]
    assert "so far: people can vote until" in voted and "1 of 1" in voted.split("people:")[-1], voted
    final = screen[screen.index("Final verdict"):]
    assert "so far" not in final and "1 of 1" in final.split("people:")[1], final
    assert screen.count("Poll closed: Where do you stand on the council's question?") == 1
    assert final.index("Done. Exported to") > 0
