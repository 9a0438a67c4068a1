"""bench/users.py: the load's discussions and the model's answers differ from one another, drawn from a seed, and
every structured answer still validates against the app's schema."""

from __future__ import annotations

import json
import random

import anthropic

from bench.users import Model, ballots, buttons, starts
from core.deliberation import schemas


def asking(text: str, schema: type | None = None) -> dict[str, object]:
    body: dict[str, object] = {"model": "m", "messages": [{"role": "user", "content": [{"type": "text",
                                                                                       "text": text}]}]}
    if schema is not None:
        body["output_config"] = {"format": {"type": "json_schema", "schema": anthropic.transform_schema(schema)}}
    return body


def test_each_discussion_differs_and_the_same_seed_draws_the_same_ones() -> None:
    drawn = starts(300, seed=7)
    assert drawn == starts(300, seed=7) and drawn != starts(300, seed=8)
    assert len({topic for topic, _ in drawn}) > 250  # topics differ (each names its team, and a subject drawn)
    assert len({experts for _, experts in drawn}) >= 3 and all(3 <= e <= 6 for _, e in drawn)


def test_the_model_s_answers_differ_by_request_and_validate_against_the_app_s_schemas() -> None:
    model = Model(seed=1, chars=1500)
    for schema in (schemas.Question, schemas.RosterSpec, schemas.RoundSynthesis, schemas.FinalSynthesis,
                   schemas.Speech):
        answers = {model(asking(f"Discussion {i}: on the table O1, O2, O3.", schema)) for i in range(20)}
        assert len(answers) == 20  # no two alike
        for answer in answers:
            schema.model_validate_json(answer)
    # Stance lines choose among the options listed, now and then a new one or none: not one label for all.
    asked = "Options on the table: O1 Adopt it, O2 Keep branches, O3 Trial first. End with Stance: <label> — why."
    labels = [model(asking(f"{asked} Turn {i}.")).rsplit("Stance: ", 1)[1].split(" — ")[0] for i in range(200)]
    assert {"O1", "O2", "O3"} <= set(labels) and len(set(labels)) > 3
    turn = model(asking(asked))
    assert turn == model(asking(asked)) and 1000 <= len(turn) <= 2200  # one request, one answer; a turn's length


def test_people_vote_for_an_option_of_the_poll_they_are_shown() -> None:
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "Vote"}},
              {"type": "actions", "elements": [
                  {"type": "button", "action_id": f"vote:p1:{k}", "value": f"p1|{k}", "text": {"type": "plain_text",
                                                                                              "text": f"O{k}"}}
                  for k in (1, 2, 3)] + [{"type": "button", "action_id": "ctl:stop", "value": "x"}]}]
    assert buttons(json.dumps(blocks)) == [(f"vote:p1:{k}", f"p1|{k}") for k in (1, 2, 3)]
    message = {"ts": "1.000001", "thread_ts": "1.000000", "blocks": blocks}
    cast = [b for i in range(50) for b in ballots(random.Random(i), "C0001", "T00001", message)]
    assert all(1 <= len(ballots(random.Random(i), "C0001", "T00001", message)) <= 3 for i in range(50))
    assert {b["actions"][0]["action_id"] for b in cast} == {f"vote:p1:{k}" for k in (1, 2, 3)}
    assert all(b["container"]["message_ts"] == "1.000001" and b["team"]["id"] == "T00001" for b in cast)
    assert ballots(random.Random(0), "C0001", "T00001", {"ts": "1", "blocks": blocks[:1]}) == []  # no poll
