"""The page's progress box from an export document (pure): round, step, who is writing with their words so far,
spend, and a verdict only once someone took a position or voted."""

from __future__ import annotations

from typing import Any

from adapters.web.view import progress


def doc(status: str = "running", *, choice: str = "undecided", ballots: int = 0) -> dict[str, Any]:
    turn = {"round": 2, "step": 3, "created_at": "2026-03-02T08:00:00+00:00", "author_key": "ada", "author": "Ada"}
    return {
        "discussion": {"status": status, "round": 2},
        "personas": [{"key": "ada", "icon": ":bulb:"}],
        "turns": [{**turn, "key": "t1", "step": 1, "kind": "initial_statement", "status": "published"},
                  {**turn, "key": "t2", "kind": "rebuttal", "status": "running"}],
        "usage": {"cost_usd": 0.125},
        "closing": {"verdict": "LEANING A", "stances": [{"choice": choice}]},
        "polls": [{"ballots": [{"superseded": False}] * ballots}],
    }


def test_a_running_discussion_shows_its_step_its_writer_and_their_words_so_far() -> None:
    shown = progress(doc(), {"t2": "So far", "t1": "an old attempt"})
    assert (shown["round"], shown["step"], shown["spent"], shown["ended"]) == (2, "Rebuttal", 0.125, False)
    assert [(e.who, e.text, e.icon) for e in shown["writing"]] == [("Ada", "So far", "💡")]


def test_no_verdict_before_anyone_takes_a_position_or_votes() -> None:
    assert progress(doc())["verdict"] == ""
    assert progress(doc(choice="A"))["verdict"] == "LEANING A"
    assert progress(doc(ballots=1))["verdict"] == "LEANING A"
    assert progress(doc("done"))["verdict"] == "LEANING A", "an ended discussion says its verdict, whatever it is"


def test_between_rounds_the_step_says_what_it_waits_for() -> None:
    assert progress(doc("waiting"))["step"] == "Waiting for someone to choose what comes next"
    assert progress(doc("done"))["ended"] and progress(doc("stopped"))["ended"]
