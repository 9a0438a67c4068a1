"""The mutation tool is honest: a mutant not run counts as not killed, a module not run fails the table, and a
mutant that changes only a message's wording is told apart from one that changes logic."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import mutation

MUTATED = '''
def x_limit__mutmut_orig(n):
    if n > 3:
        raise ValueError(f"at most 3, not {n}")
    return n

def x_limit__mutmut_1(n):
    if n > 3:
        raise ValueError(f"XXat most 3, not {n}XX")
    return n

def x_limit__mutmut_2(n):
    if n >= 3:
        raise ValueError(f"at most 3, not {n}")
    return n

def x_limit__mutmut_3(n):
    if n > 3:
        raise ValueError(None)
    return n

def x_word__mutmut_orig(w):
    if w in ("today", "tonight"):
        log.warning("%s is a day word", w, exc_info=True)
        return {"when": w.removeprefix("at ")}["when"]
    return "nothing"

def x_word__mutmut_1(w):
    if w in ("today", "XXtonightXX"):
        log.warning("%s is a day word", w, exc_info=True)
        return {"when": w.removeprefix("at ")}["when"]
    return "nothing"

def x_word__mutmut_2(w):
    if w in ("today", "tonight"):
        log.warning("%s is a day word", w, exc_info=True)
        return {"when": w.removeprefix("XXat XX")}["when"]
    return "nothing"

def x_word__mutmut_3(w):
    if w in ("today", "tonight"):
        log.warning("%s is a day word", w, exc_info=True)
        return {"XXwhenXX": w.removeprefix("at ")}["when"]
    return "nothing"

def x_word__mutmut_5(w):
    if w in ("today", "tonight"):
        log.warning(None, w, exc_info=False)
        return {"when": w.removeprefix("at ")}["when"]
    return "nothing"

def x_word__mutmut_4(w):
    if w in ("today", "tonight"):
        log.warning("%s is a day word", w, exc_info=True)
        return {"when": w.removeprefix("at ")}["when"]
    return "XXnothingXX"
'''


def test_a_mutant_that_was_not_run_is_not_killed() -> None:
    assert mutation.score({"a": "killed", "b": "timeout", "c": "skipped", "d": "not checked", "e": "no tests",
                           "f": "survived"}) == (2, 6)


def test_string_only_mutants_are_told_apart_from_logic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mutation, "SCRATCH", tmp_path)
    module = "core/limits.py"
    mutated = tmp_path / mutation.slug(module) / "mutants" / module
    mutated.parent.mkdir(parents=True)
    mutated.write_text(MUTATED)
    # The message's words changed: strings only. The comparison, or a message replaced by None: logic. So is a
    # word the code compares, parses with or looks up (mutants 1–3 of x_word); a returned text is wording, and so
    # is all of a log line (mutant 5).
    assert mutation.string_only(module) == {"x_limit__mutmut_1", "x_word__mutmut_4", "x_word__mutmut_5"}


def test_a_module_that_was_not_run_fails_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(mutation, "SCRATCH", tmp_path)
    assert mutation.report(modules=["core/running/spending.py"]) == 1
    assert "NOT RUN" in capsys.readouterr().out


def test_a_module_of_declarations_only_is_said_to_have_nothing_to_mutate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(mutation, "SCRATCH", tmp_path)
    work = tmp_path / mutation.slug("core/control/commands.py")
    work.mkdir(parents=True)
    (work / mutation.RUN_FILE).write_text('{"commit": "abc", "exit": 1}')
    assert not mutation.has_functions("core/control/commands.py")
    assert mutation.report(modules=["core/control/commands.py"]) == 0
    assert "no functions to mutate" in capsys.readouterr().out
    assert mutation.has_functions("core/control/defaults.py")
