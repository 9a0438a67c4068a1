"""The mutation tool is honest: a mutant not run counts as not killed, a module not run or whose mutmut failed fails
the table, a mutant that changes only a message's wording is told apart from one that changes logic, and the table
kept in the repo says which rows were measured on another version of their module."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests import mutation
from tests.mutation import cli, runs, scoring

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

def x_close__mutmut_orig(d, names, n):
    d.pending = "final"
    notice(d, f"{d.id}:synthesize:{d.round}", f"{n} asked for it")
    post = Post(kind="turn", key=f"{d.id}:close", text=f"Closed by {n + 1}: " + ", ".join(names))
    return "".join(names), {"kind": post.kind}, post

def x_close__mutmut_1(d, names, n):
    d.pending = "XXfinalXX"
    notice(d, f"{d.id}:synthesize:{d.round}", f"{n} asked for it")
    post = Post(kind="turn", key=f"{d.id}:close", text=f"Closed by {n + 1}: " + ", ".join(names))
    return "".join(names), {"kind": post.kind}, post

def x_close__mutmut_2(d, names, n):
    d.pending = "final"
    notice(d, f"{d.id}:XXsynthesizeXX:{d.round}", f"{n} asked for it")
    post = Post(kind="turn", key=f"{d.id}:close", text=f"Closed by {n + 1}: " + ", ".join(names))
    return "".join(names), {"kind": post.kind}, post

def x_close__mutmut_3(d, names, n):
    d.pending = "final"
    notice(d, f"{d.id}:synthesize:{d.round}", f"{n} asked for it")
    post = Post(kind="XXturnXX", key=f"{d.id}:close", text=f"Closed by {n + 1}: " + ", ".join(names))
    return "".join(names), {"kind": post.kind}, post

def x_close__mutmut_4(d, names, n):
    d.pending = "final"
    notice(d, f"{d.id}:synthesize:{d.round}", f"{n} asked for it")
    post = Post(kind="turn", key=f"{d.id}:close", text=f"XXClosed by {n + 1}: XX" + ", ".join(names))
    return "".join(names), {"kind": post.kind}, post

def x_close__mutmut_5(d, names, n):
    d.pending = "final"
    notice(d, f"{d.id}:synthesize:{d.round}", f"{n} asked for it")
    post = Post(kind="turn", key=f"{d.id}:close", text=f"Closed by {n - 1}: " + ", ".join(names))
    return "".join(names), {"kind": post.kind}, post

def x_close__mutmut_6(d, names, n):
    d.pending = "final"
    notice(d, f"{d.id}:synthesize:{d.round}", f"{n} asked for it")
    post = Post(kind="turn", key=f"{d.id}:close", text=f"Closed by {n + 1}: " + ", ".join(names))
    return "XXXX".join(names), {"kind": post.kind}, post

def x_close__mutmut_7(d, names, n):
    d.pending = "final"
    notice(d, f"{d.id}:synthesize:{d.round}", f"{n} asked for it")
    post = Post(kind="turn", key=f"{d.id}:close", text=f"Closed by {n + 1}: " + ", ".join(names))
    return "".join(names), {"XXkindXX": post.kind}, post

def x_close__mutmut_8(d, names, n):
    d.pending = "final"
    notice(d, f"{d.id}:synthesize:{d.round}", f"{n} asked for it")
    post = Post(kind="turn", key=f"{d.id}:XXcloseXX", text=f"Closed by {n + 1}: " + ", ".join(names))
    return "".join(names), {"kind": post.kind}, post

def x_close__mutmut_9(d, names, n):
    d.pending = "final"
    notice(d, f"{d.id}:synthesize:{d.round}", f"{n} asked for it")
    post = Post(kind="turn", key=f"{d.id}:close", text=f"Closed by {n + 1}: " + "XX, XX".join(names))
    return "".join(names), {"kind": post.kind}, post
'''


def test_a_mutant_that_was_not_run_is_not_killed() -> None:
    assert mutation.score({"a": "killed", "b": "timeout", "c": "skipped", "d": "not checked", "e": "no tests",
                           "f": "survived"}) == (2, 6)


def test_string_only_mutants_are_told_apart_from_logic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runs, "SCRATCH", tmp_path)
    module = "core/limits.py"
    mutated = tmp_path / mutation.slug(module) / "mutants" / module
    mutated.parent.mkdir(parents=True)
    mutated.write_text(MUTATED)
    # The message's words changed: strings only. The comparison, or a message replaced by None: logic. So is a
    # word the code compares, parses with or looks up (mutants 1–3 of x_word), a returned word (4), and a regular
    # expression's pattern or replacement (x_number); all of a log line is wording (mutant 5).
    # x_close: a state set (`pending="final"`, 1), a dedupe key passed on (2), a post's kind (3), an expression
    # inside the words shown (5), what a join puts between the parts of a returned value (6), a serialized key (7)
    # and a post's key (8) are logic; only the words of the post's text (4, and its separator, 9) are wording.
    assert mutation.string_only(module) == {"x_limit__mutmut_1", "x_word__mutmut_5", "x_close__mutmut_4",
                                            "x_close__mutmut_9"}


def current(module: str) -> dict[str, object]:
    """A run's facts for the module and its tests as they are at HEAD."""
    head = mutation.git("rev-parse", "--short=12", "HEAD")
    return {"commit": head, "blob": mutation.blob(module, head), "tests": mutation.test_blobs(module, head), "exit": 0}


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
    row = mutation.entry(module, {**current(module), "exit": 2}, {"x.y__mutmut_1": "killed"}, set(), True,
                         "def y():\n    return 1\n")
    mutation.write_entry(scores, module, row)
    assert mutation.report(modules=[module], scores=scores) == 1
    assert "MUTMUT FAILED (exit 2)" in capsys.readouterr().out


def outcomes(killed: int, survived: int) -> dict[str, str]:
    found = {f"x.f__mutmut_{i}": "killed" for i in range(killed)}
    return found | {f"x.f__mutmut_{killed + i}": "survived" for i in range(survived)}


SPENDING = "core/running/spending.py"
SPENDING_SOURCE = "def f(x):\n    return x\n"  # one function: what `outcomes` names every mutant's


def test_the_verdict_is_on_the_whole_score_less_the_equivalent_mutants_listed_by_name(
        monkeypatch: pytest.MonkeyPatch) -> None:
    rule = SPENDING
    # 90 of 100 logic mutants killed, and 10 more that change only wording, all survivors: 90 of 110 misses.
    strings = {f"x.f__mutmut_{i}" for i in range(100, 110)}
    row = mutation.entry(rule, current(rule), outcomes(90, 20), strings, True, SPENDING_SOURCE)
    assert (row["killed"], row["mutants"], row["logic_killed"], row["logic_mutants"]) == (90, 110, 90, 100)
    assert row["verdict"] == "MISSES"
    assert mutation.TARGETS == {}, "every rule module is held to the one target"
    assert mutation.entry(rule, current(rule), outcomes(90, 10), set(), True, SPENDING_SOURCE)["verdict"] == "meets"
    # Mutants named as equivalent, with the reason, leave the count; no others do.
    monkeypatch.setattr(scoring, "EQUIVALENT", {f"x.f__mutmut_{i}": "a cache's size" for i in range(100, 110)})
    row = mutation.entry(rule, current(rule), outcomes(90, 20), strings, True, SPENDING_SOURCE)
    assert (row["killed"], row["mutants"], row["verdict"]) == (90, 100, "meets")
    assert row["equivalent"] == [f"x.f__mutmut_{i}: a cache's size" for i in sorted(range(100, 110), key=str)]


def test_a_module_level_mutant_is_listed_as_equivalent_under_its_module_s_name(
        monkeypatch: pytest.MonkeyPatch) -> None:
    rule = SPENDING
    found = {**outcomes(1, 0), "<module>.LIMIT__const_1": "survived", "<decorated>.f#1": "survived"}
    # Another module's LIMIT, listed under that module's name, leaves this one's in the count.
    monkeypatch.setattr(scoring, "EQUIVALENT", {"core.running.other.<module>.LIMIT__const_1": "another module's"})
    row = mutation.entry(rule, current(rule), found, set(), True, SPENDING_SOURCE)
    assert (row["killed"], row["mutants"], row["equivalent"]) == (1, 3, [])
    monkeypatch.setattr(scoring, "EQUIVALENT", {"core.running.spending.<module>.LIMIT__const_1": "never read",
                                                "core.running.spending.<decorated>.f#1": "a cache's size"})
    row = mutation.entry(rule, current(rule), found, set(), True, SPENDING_SOURCE)
    assert (row["killed"], row["mutants"]) == (1, 1)
    assert row["equivalent"] == ["<decorated>.f#1: a cache's size", "<module>.LIMIT__const_1: never read"]


def test_a_row_names_the_functions_it_covers_and_misses_when_its_mutants_leave_one_out(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    module, scores = "core/running/lease.py", tmp_path / "scores.json"
    source = (mutation.ROOT / module).read_text()
    assert {"Lease.take", "Lease.hold", "Lease._heartbeat", "Lease.fenced", "Lease._fenced"} <= set(
        mutation.functions_of(source))
    assert mutation.ONLY_FUNCTIONS == {}, "no row leaves functions out"
    # Mutants of two of its methods only (as the old driver row had): all killed, and still it misses.
    found = {"core.running.lease.x\u01c1Lease\u01c1take__mutmut_1": "killed",
             "core.running.lease.x\u01c1Lease\u01c1hold__mutmut_1": "killed"}
    row = mutation.entry(module, current(module), found, set(), True, source)
    assert row["functions"] == ["Lease.hold", "Lease.take"] and "Lease._heartbeat" in str(row["functions_missed"])
    assert row["verdict"] == "MISSES"
    mutation.write_entry(scores, module, row)
    assert mutation.report(modules=[module], scores=scores) == 1
    assert "covers 2 functions, not Lease.__init__" in capsys.readouterr().out
    every = {f"core.running.lease.x\u01c1{f.replace('.', chr(0x1C1))}__mutmut_1": "killed"
             for f in mutation.functions_of(source)}
    assert mutation.entry(module, current(module), every, set(), True, source)["functions_missed"] == []


def test_module_level_rules_are_mutated_too() -> None:
    source = (mutation.ROOT / "core/deliberation/evidence.py").read_text()
    mutants = dict(mutation.module_level_mutants(source))
    assert "<module>._REF__const_1" in mutants and "<module>.MARK__const_1" in mutants
    changed = mutants["<module>._REF__const_1"]
    assert changed != source and "def mark_unverified" in changed and "XX[#IiTtBbPp]" in changed
    compile(changed, "evidence.py", "exec")  # each mutant is still Python
    small = 'LIMIT = 3\nON = True\n"""a docstring is no rule"""\nclass K:\n    WORDS = ("a", 2)\n'
    assert mutation.module_level_mutants('T = TypeVar("T")\nlog = logging.getLogger("x")\n') == []
    assert {n: s.splitlines() for n, s in mutation.module_level_mutants(small)} == {
        "<module>.LIMIT__const_1": ["LIMIT = 4", "ON = True", '"""a docstring is no rule"""', "class K:",
                                    '    WORDS = ("a", 2)'],
        "<module>.ON__const_1": ["LIMIT = 3", "ON = False", '"""a docstring is no rule"""', "class K:",
                                 '    WORDS = ("a", 2)'],
        "<module>.K.WORDS__const_1": ["LIMIT = 3", "ON = True", '"""a docstring is no rule"""', "class K:",
                                      "    WORDS = ('XXaXX', 2)"],
        "<module>.K.WORDS__const_2": ["LIMIT = 3", "ON = True", '"""a docstring is no rule"""', "class K:",
                                      '    WORDS = ("a", 3)'],
    }
    assert mutation.function_of("<module>._REF__const_1") == "<module>"


def test_decorated_functions_which_mutmut_leaves_alone_are_mutated_too() -> None:
    source = (
        "import functools\n\n@functools.lru_cache\ndef seen(n):\n    \"\"\"Doc.\"\"\"\n    return n > 2 and not n\n\n"
        "class K:\n    @property\n    def size(self):\n        return self.n + 1  # why\n\n"
        "    @staticmethod\n    def plain(n):\n        return n < 1\n")
    mutants = dict(mutation.decorated_mutants(source))
    assert sorted(mutants) == ["<decorated>.K.size#1", "<decorated>.K.size#2", "<decorated>.seen#1",
                               "<decorated>.seen#2", "<decorated>.seen#3", "<decorated>.seen#4"]
    assert "    return n > 2 or not n\n" in mutants["<decorated>.seen#1"]
    assert "    return n >= 2 and (not n)\n" in mutants["<decorated>.seen#2"]
    assert "    return n > 2 and n\n" in mutants["<decorated>.seen#3"]
    assert "    return n > 3 and (not n)\n" in mutants["<decorated>.seen#4"]
    assert "        return self.n - 1\n" in mutants["<decorated>.K.size#1"]
    assert "        return self.n + 2\n" in mutants["<decorated>.K.size#2"]
    assert all("def plain(n):\n        return n < 1" in m and "@functools.lru_cache" in m for m in mutants.values())
    assert mutation.function_of("<decorated>.K.size#2") == "K.size"


def test_a_function_mutmut_has_no_operator_for_is_emptied_so_that_its_row_covers_it() -> None:
    source = ('LEAD = "lead"\n\n\nclass Floor:\n    def seats(self):\n        """Doc."""\n        return [LEAD]\n\n'
              '    def other(self):\n        return 1\n\n\ndef kept():\n    return [LEAD]\n')
    mutants = dict(mutation.emptied_mutants(source, ["Floor.seats", "gone"]))
    assert list(mutants) == ["<emptied>.Floor.seats"]
    emptied = mutants["<emptied>.Floor.seats"]
    assert '    def seats(self):\n        """Doc."""\n        return None\n\n    def other(self):\n' in emptied
    assert emptied.endswith("def kept():\n    return [LEAD]\n")
    assert mutation.function_of("<emptied>.Floor.seats") == "Floor.seats"
    assert mutation.equivalent_key("core/x.py", "<emptied>.Floor.seats") == "core.x.<emptied>.Floor.seats"


def test_the_rule_modules_that_guard_prompts_and_the_driver_s_parts_have_rows() -> None:
    for module in ("core/deliberation/links.py", "core/deliberation/prompts.py", "core/control/schedules.py",
                   "core/deliberation/factcheck.py", "core/running/driver.py", "core/running/lease.py",
                   "core/running/steps.py", "core/running/turns.py", "core/running/outbox.py",
                   "core/running/placeholders.py"):
        assert module in mutation.MODULES and all((mutation.ROOT / t).exists() for t in mutation.MODULES[module])


def test_a_rerun_replaces_the_module_s_entry_and_the_file_stays_sorted(tmp_path: Path) -> None:
    scores = tmp_path / "scores.json"
    b, a = "core/storage/activity.py", "core/control/guard.py"
    mutation.write_entry(scores, b, mutation.entry(b, current(b), outcomes(5, 5), set(), True, SPENDING_SOURCE))
    mutation.write_entry(scores, a, mutation.entry(a, current(a), outcomes(9, 1), set(), True, SPENDING_SOURCE))
    mutation.write_entry(scores, b, mutation.entry(b, current(b), outcomes(10, 0), set(), True, SPENDING_SOURCE))
    table = json.loads(scores.read_text())
    assert list(table) == sorted([a, b])
    assert (table[b]["killed"], table[b]["verdict"]) == (10, "meets")
    assert (table[a]["killed"], table[a]["verdict"]) == (9, "meets")


def test_the_table_is_printed_from_the_file_with_the_commit_and_the_survivors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module, scores = "core/running/spending.py", tmp_path / "scores.json"
    facts = current(module)
    row = mutation.entry(module, facts, outcomes(19, 1) | {"x.g__mutmut_1": "no tests"}, {"x.g__mutmut_1"}, True,
                         SPENDING_SOURCE + "def g():\n    return 2\n")
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
                                                        outcomes(10, 0), set(), True, SPENDING_SOURCE))
    assert mutation.report(modules=[module], scores=scores) == 1
    assert "meets, STALE" in capsys.readouterr().out
    mutation.write_entry(scores, module, mutation.entry(module, current(module), outcomes(10, 0), set(), True,
                                                        SPENDING_SOURCE))
    assert mutation.report(modules=[module], scores=scores) == 0
    assert "STALE" not in capsys.readouterr().out


def test_a_row_whose_tests_changed_since_is_stale(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A weakened test kills less: the row measured with the stronger one no longer says what the tests catch."""
    module, scores = SPENDING, tmp_path / "scores.json"
    facts = current(module)
    tests = dict(facts["tests"])  # type: ignore[call-overload]
    first = mutation.MODULES[module][0]
    tests[first] = "0" * 40  # the test file as it was before an edit
    mutation.write_entry(scores, module, mutation.entry(module, {**facts, "tests": tests}, outcomes(10, 0), set(),
                                                        True, SPENDING_SOURCE))
    assert mutation.report(modules=[module], scores=scores) == 1
    assert f"meets, STALE (its tests changed since: {first})" in capsys.readouterr().out
    # A row from before the tests were recorded cannot say they are the same.
    mutation.write_entry(scores, module, mutation.entry(module, {**facts, "tests": {}}, outcomes(10, 0), set(),
                                                        True, SPENDING_SOURCE))
    assert mutation.report(modules=[module], scores=scores) == 1
    assert "STALE (its tests were not recorded)" in capsys.readouterr().out


def test_a_module_with_postgresql_tests_is_not_measured_without_postgresql(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The driver's fences measured 77/91 without PostgreSQL and 78/91 with it: a skipped test kills nothing."""
    monkeypatch.delenv("TEST_DATABASE_URL", raising=False)
    ran: list[str] = []
    monkeypatch.setattr(cli, "run", lambda module, *_: ran.append(module))
    with pytest.raises(SystemExit):
        mutation.main(["core/running/lease.py"])
    assert ran == [] and "set TEST_DATABASE_URL" in capsys.readouterr().err
    assert "core/storage/activity.py" in mutation.ON_POSTGRES
    assert "core/deliberation/engine.py" not in mutation.ON_POSTGRES
    monkeypatch.setenv("TEST_DATABASE_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test")
    monkeypatch.setattr(cli, "report", lambda *_: 0)
    assert mutation.main(["core/running/lease.py"]) == 0 and ran == ["core/running/lease.py"]


def test_a_row_kept_from_an_older_rule_is_judged_by_today_s(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Rows measured when the verdict was on the logic-only score said "meets" at 82% of all mutants."""
    module, scores = SPENDING, tmp_path / "scores.json"
    row = mutation.entry(module, current(module), outcomes(82, 18), set(), True, SPENDING_SOURCE)
    row["verdict"] = "meets"
    mutation.write_entry(scores, module, row)
    assert mutation.report(modules=[module], scores=scores) == 1
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith(module))
    assert line.endswith("MISSES") and "82/100" in line


LEFT_OUT = "tests/core/control/test_limits_race.py"  # a test the spending row does not name


def test_a_row_is_stale_when_a_fixture_or_fake_its_tests_use_changed_or_a_test_left_the_row(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Its tests are made of more than the files the row names: the conftest.py fixtures above them and the fakes
    they import; and a row measured with a test the row no longer names measured more than it runs now."""
    module, scores = SPENDING, tmp_path / "scores.json"
    made_of = mutation.test_files(module)
    assert {"tests/conftest.py", "tests/core/conftest.py", "tests/fakes/clock.py"} <= set(made_of)
    assert set(mutation.MODULES[module]) <= set(made_of)
    assert "tests/fakes/slack_api.py" not in made_of, "only what the tests import"
    facts = current(module)
    assert LEFT_OUT not in made_of
    for then, why in (({"tests/fakes/clock.py": "0" * 40}, "tests/fakes/clock.py"),
                      ({"tests/core/conftest.py": "0" * 40}, "tests/core/conftest.py"),
                      ({LEFT_OUT: mutation.git("rev-parse", f"HEAD:{LEFT_OUT}")}, LEFT_OUT)):  # as it is now
        tests = {**dict(facts["tests"]), **then}  # type: ignore[call-overload]
        mutation.write_entry(scores, module, mutation.entry(module, {**facts, "tests": tests}, outcomes(10, 0), set(),
                                                            True, SPENDING_SOURCE))
        assert mutation.report(modules=[module], scores=scores) == 1
        assert f"meets, STALE (its tests changed since: {why})" in capsys.readouterr().out
    mutation.write_entry(scores, module, mutation.entry(module, facts, outcomes(10, 0), set(), True, SPENDING_SOURCE))
    assert mutation.report(modules=[module], scores=scores) == 0



def _demo_row(tmp_path: Path, rules: str) -> None:
    for folder in ("core", "tests"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "core" / "demo_rules.py").write_text(rules)
    (tmp_path / "tests" / "test_demo_rules.py").write_text(
        "from core.demo_rules import over\n\n\ndef test_over():\n    assert over(4) and not over(3)\n")


def test_module_level_mutants_run_in_forked_children_each_importing_its_own_mutant(tmp_path: Path) -> None:
    _demo_row(tmp_path, 'LIMIT = 3\nUNREAD = "never read"\n\n\ndef over(n):\n    return n > LIMIT\n')
    found = mutation.run_module_level("core/demo_rules.py", tmp_path, children=2,
                                      tests=["tests/test_demo_rules.py"], emptied=["over"])
    # LIMIT 3 -> 4 fails the test, as `over` returning None does; the string nothing reads does not
    assert found == {"<module>.LIMIT__const_1": "killed", "<module>.UNREAD__const_1": "survived",
                     "<emptied>.over": "killed"}
    assert "LIMIT = 3" in (tmp_path / "core" / "demo_rules.py").read_text()  # the file itself is never mutated
