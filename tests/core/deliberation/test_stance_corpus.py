"""Stance lines as models write them, read strictly: by the option's id (in any form the bot itself shows, with the
label beside it in brackets or after a colon, in Markdown emphasis, with a trailing period) or by its whole label,
never by words in common. The corpus mixes English with the other languages discussions run in."""

from __future__ import annotations

import pytest

from core.deliberation import stances
from core.deliberation.choices import Option

TABLE = [Option("O1", "Run a four-week trial"), Option("O2", "Stabilise the core first"),
         Option("O3", "Keep release branches")]

# (the turn's last line, the choice it records). Each was written the way a model writes it.
CORPUS = [
    ("Stance: O1 (Run a four-week trial) — cheap to undo, and we learn fast", "O1"),
    ("Stance: O1: trial — we learn in a month", "O1"),
    ("**Stance:** O1 — the trial answers the open questions", "O1"),
    ("Stance: O2 — stability first.", "O2"),
    ("Stance: O2.", "O2"),
    ("Stance: O3 (Keep release branches)", "O3"),
    ("*Stance:* **O2** — fix what breaks every week", "O2"),
    ("> Stance: [O3] — the release train works", "O3"),
    ("Stance: Stabilise the core first [O2] — outages cost more than features", "O2"),
    ("Stance: Run a four-week trial — reversible", "O1"),
    ("Stance: stabilise the core first — as said", "O2"),
    ("Stance: **Keep release branches** — regulated customers need them", "O3"),
    ("Stance: o1 — lower case is still the id", "O1"),
    ("Stance: O2 – en dash instead of em dash", "O2"),
    ("Stance: O3 | a pipe as separator", "O3"),
    ("Stance: O1 - hyphen with spaces", "O1"),
    ("Stance：O2 — 先に基盤を安定させる", "O2"),
    ("Stance: O1 — 四週間の試行で十分です", "O1"),
    ("Haltung: O2 — erst den Kern stabilisieren", "O2"),
    ("Standpunkt: O1 (Run a four-week trial) — vier Wochen reichen", "O1"),
    ("Position: O3 — les branches de release restent", "O3"),
    ("Postura: O2: núcleo — primero estabilizar", "O2"),
    ("Posizione: O1 — la prova è reversibile", "O1"),
    ("Standpunt: O3 — releasebranches houden", "O3"),
    ("Stance: O2 — zależy nam na stabilności", "O2"),
    ("Stance: undecided — nie wiem jeszcze", "undecided"),
    ("Stance: unentschieden — kommt auf die Daten an", "undecided"),
    ("Stance: not sure — need the numbers", "undecided"),
    ("Stance: undecided, leaning O1 — the trial looks cheap", "undecided"),
    # Words in common are never a match, nor a word for a side beside a list of actions.
    ("Stance: trial — the four weeks", "unreadable"),
    ("Stance: the core — first", "unreadable"),
    ("Stance: for — broadly", "unreadable"),
    ("Stance: dafür — weil es billiger ist", "unreadable"),
    ("Stance: O4 — not on the table", "unreadable"),
    ("Stance: O1 or O2 — either works", "unreadable"),
    ("Stance: O1 (Stabilise the core first) — the id and the label disagree", "unreadable"),
    ("Stance: O1 (or O2) — hedging between two", "unreadable"),
    ("Stance: b). — typed in a hurry", "unreadable"),
    ("Stance: Do not run a four-week trial — the opposite wording", "unreadable"),
]


def test_the_corpus_is_large_and_mixes_languages() -> None:
    assert len(CORPUS) >= 30
    assert sum(1 for line, _ in CORPUS if not line.isascii()) >= 8


@pytest.mark.parametrize("line,choice", CORPUS)
def test_a_stance_line_as_models_write_it_records_the_option_it_names(line: str, choice: str) -> None:
    parsed = stances.parse(f"My turn, in a few sentences.\n\n{line}")
    assert parsed is not None, line
    assert stances.record(parsed, TABLE)["choice"] == choice


@pytest.mark.parametrize("line,choice", [(x, c) for x, c in CORPUS if c.startswith("O")])
def test_a_post_shows_the_stance_with_its_id_and_label(line: str, choice: str) -> None:
    parsed = stances.parse(line)
    assert parsed is not None
    said = stances.record(parsed, TABLE)["said"]
    label = next(o.label for o in TABLE if o.id == choice)
    assert said.startswith(f"Stance: {choice} ({label})")


def test_prose_that_mentions_a_stance_is_not_a_stance_line() -> None:
    assert stances.parse("Stance: for, because it is cheaper") is None  # no dash and no id: prose
    assert stances.parse("We should take a stance: O1 — the trial") is None
    assert stances.parse("Stance: O1 — the trial\nand then more text") is None  # the last line decides
