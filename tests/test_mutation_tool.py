"""The mutation tool is honest: a mutant not run counts as not killed, a module not run or whose mutmut failed fails
the table, a mutant that changes only a message's wording is told apart from one that changes logic, and the table
kept in the repo says which rows were measured on another version of their module."""

from __future__ import annotations

import json
import subprocess
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

def x_number__mutmut_orig(ref):
    return re.sub(r"^#", "", ref)

def x_number__mutmut_1(ref):
    return re.sub(r"XX^#XX", "", ref)

def x_number__mutmut_2(ref):
    return re.sub(r"^#", "XXXX", ref)

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
    # word the code compares, parses with or looks up (mutants 1–3 of x_word), and a regular expression's pattern
    # or replacement (x_number); a returned text is wording, and so is all of a log line (mutant 5).
    assert mutation.string_only(module) == {"x_limit__mutmut_1", "x_word__mutmut_4", "x_word__mutmut_5"}


def current(module: str) -> dict[str, object]:
    """A run's facts for the module as it is at HEAD."""
    head = mutation.git("rev-parse", "--short=12", "HEAD")
    return {"commit": head, "blob": mutation.blob(module, head), "exit": 0}


def test_a_module_that_was_not_run_fails_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert mutation.report(modules=["core/running/spending.py"], scores=tmp_path / "scores.json") == 1
    assert "NOT RUN" in capsys.readouterr().out


def test_a_module_of_declarations_only_is_said_to_have_nothing_to_mutate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module, scores = "core/control/commands.py", tmp_path / "scores.json"
    assert not mutation.has_functions(mutation.ROOT / module)
    assert mutation.has_functions(mutation.ROOT / "core/control/defaults.py")
    # mutmut exits 1 when it finds nothing to mutate: that is no failure of a module with no function.
    mutation.write_entry(scores, module, mutation.entry(module, {**current(module), "exit": 1}, {}, set(), False))
    assert mutation.report(modules=[module], scores=scores) == 0
    assert "no functions to mutate" in capsys.readouterr().out


def test_a_module_with_functions_but_no_mutants_counted_was_not_run() -> None:
    module = "core/running/spending.py"
    assert mutation.entry(module, current(module), {}, set(), True)["verdict"] == "NOT RUN"


def test_a_failed_mutmut_fails_the_table_whatever_it_counted(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    module, scores = "core/running/spending.py", tmp_path / "scores.json"
    row = mutation.entry(module, {**current(module), "exit": 2}, {"x.y__mutmut_1": "killed"}, set(), True)
    mutation.write_entry(scores, module, row)
    assert mutation.report(modules=[module], scores=scores) == 1
    assert "MUTMUT FAILED (exit 2)" in capsys.readouterr().out


def outcomes(killed: int, survived: int) -> dict[str, str]:
    found = {f"x.f__mutmut_{i}": "killed" for i in range(killed)}
    return found | {f"x.f__mutmut_{killed + i}": "survived" for i in range(survived)}


def test_the_target_is_the_logic_only_score_and_the_fences_have_their_own() -> None:
    rule, driver = "core/running/spending.py", "core/running/lease.py"
    # 86 of 100 logic mutants killed, and 10 more that change only wording, all survivors.
    found = outcomes(86, 24)
    strings = {f"x.f__mutmut_{i}" for i in range(100, 110)}
    row = mutation.entry(rule, current(rule), found, strings, True)
    assert (row["killed"], row["mutants"], row["logic_killed"], row["logic_mutants"]) == (86, 110, 86, 100)
    assert row["verdict"] == "MISSES"
    assert mutation.entry(driver, current(driver), found, strings, True)["verdict"] == "meets"
    assert mutation.entry(rule, current(rule), outcomes(90, 10), set(), True)["verdict"] == "meets"


def test_a_rerun_replaces_the_module_s_entry_and_the_file_stays_sorted(tmp_path: Path) -> None:
    scores = tmp_path / "scores.json"
    b, a = "core/storage/activity.py", "core/control/guard.py"
    mutation.write_entry(scores, b, mutation.entry(b, current(b), outcomes(5, 5), set(), True))
    mutation.write_entry(scores, a, mutation.entry(a, current(a), outcomes(9, 1), set(), True))
    mutation.write_entry(scores, b, mutation.entry(b, current(b), outcomes(10, 0), set(), True))
    table = json.loads(scores.read_text())
    assert list(table) == sorted([a, b])
    assert (table[b]["killed"], table[b]["verdict"]) == (10, "meets")
    assert (table[a]["killed"], table[a]["verdict"]) == (9, "meets")


def test_the_table_is_printed_from_the_file_with_the_commit_and_the_survivors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module, scores = "core/running/spending.py", tmp_path / "scores.json"
    facts = current(module)
    row = mutation.entry(module, facts, outcomes(19, 1) | {"x.g__mutmut_1": "no tests"}, {"x.g__mutmut_1"}, True)
    mutation.write_entry(scores, module, row)
    assert mutation.report(show_survivors=True, modules=[module], scores=scores) == 0
    out = capsys.readouterr().out
    assert f"{module}: x.f__mutmut_19: survived\n" in out
    assert f"{module}: x.g__mutmut_1: no tests (strings only)\n" in out
    line = next(line for line in out.splitlines() if line.startswith(module) and "meets" in line)
    assert str(facts["commit"]) in line and "19/21" in line and "95% (19/20)" in line


def test_a_row_measured_on_another_version_of_the_module_is_stale(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    module, scores = "core/running/spending.py", tmp_path / "scores.json"
    edited = (mutation.ROOT / module).read_text() + "\n# an edit after the run\n"
    then = subprocess.run(["git", "hash-object", "--stdin"], input=edited, capture_output=True, text=True,
                          check=True).stdout.strip()
    mutation.write_entry(scores, module, mutation.entry(module, {**current(module), "blob": then},
                                                        outcomes(10, 0), set(), True))
    assert mutation.report(modules=[module], scores=scores) == 1
    assert "meets, STALE" in capsys.readouterr().out
    mutation.write_entry(scores, module, mutation.entry(module, current(module), outcomes(10, 0), set(), True))
    assert mutation.report(modules=[module], scores=scores) == 0
    assert "STALE" not in capsys.readouterr().out


def test_a_module_with_postgresql_tests_is_not_measured_without_postgresql(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The driver's fences measured 77/91 without PostgreSQL and 78/91 with it: a skipped test kills nothing."""
    monkeypatch.delenv("TEST_DATABASE_URL", raising=False)
    ran: list[str] = []
    monkeypatch.setattr(mutation, "run", lambda module, *_: ran.append(module))
    with pytest.raises(SystemExit):
        mutation.main(["core/running/lease.py"])
    assert ran == [] and "set TEST_DATABASE_URL" in capsys.readouterr().err
    assert "core/storage/activity.py" in mutation.ON_POSTGRES
    assert "core/deliberation/engine.py" not in mutation.ON_POSTGRES
    monkeypatch.setenv("TEST_DATABASE_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test")
    monkeypatch.setattr(mutation, "report", lambda *_: 0)
    assert mutation.main(["core/running/lease.py"]) == 0 and ran == ["core/running/lease.py"]
