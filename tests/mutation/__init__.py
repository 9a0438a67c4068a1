"""Mutation testing of the rule modules with mutmut, one module at a time against the tests that exercise it.

    python -m tests.mutation                      # every rule module, then the table of scores
    python -m tests.mutation core/running/spending.py --children 1
    python -m tests.mutation --report             # the table again, from tests/mutation_scores.json

The storage modules, recall, the rate budget and the driver's fences have PostgreSQL-only tests: they are measured
only with TEST_DATABASE_URL set (`postgresql+asyncpg://postgres@127.0.0.1:5432/test` here).

Each module runs in its own scratch copy of the tree (mutmut mutates a copy under `mutants/`), so runs never
touch the code of the working tree. A finished run's row (the commit measured, the module's blob there, killed of
all, both scores, the functions covered, the verdict and the survivors' names) replaces that module's entry in
tests/mutation_scores.json, which is tracked: `--report` prints the table from it, so any checkout shows it, and
marks a row stale when the module's file or one of the files its tests are made of (the test files its row names,
the conftest.py files above them, the helpers and fakes they import) is no longer the one measured, or when the row
measured a test it no longer names.
mutmut mutates functions only; the module's top-level and class-level constants (a compiled pattern, a limit) are
mutated here too, and the row's tests run against each, as are a decorated function's and, emptied to return None, a
function's whose body mutmut has no operator for.
The score is the share of mutants the tests kill (a timeout counts as killed: the mutant hung the code), the
mutants listed in EQUIVALENT by name (with the reason) left out; the verdict is on it. A mutant that was not run
(skipped, not checked, no tests) counts as not killed, and a run whose mutmut failed scores nothing. Beside it, the
logic-only score also leaves out the mutants that change nothing but words shown to people (see `_blank_strings`).
"""

from __future__ import annotations

# Its parts, each with one job: rows (the modules measured and their tests), mutants (those mutmut does not make),
# warm (the process that runs those), strings (the wording-only mutants), scoring (the score, the row, the scores
# file), staleness (whether a row still measures HEAD), runs (a row's run in its scratch copy) and cli (the table
# and the command line). Their names are re-exported here. A test that patches a constant or a function patches it
# in the module that reads it (`runs.SCRATCH`, `scoring.EQUIVALENT`, `cli.run`): a name re-exported here is a copy.
from tests.mutation.cli import main, report
from tests.mutation.mutants import (
    DECORATED_PREFIX,
    EMPTIED_PREFIX,
    TOP_PREFIX,
    decorated_mutants,
    emptied_mutants,
    module_level_mutants,
)
from tests.mutation.rows import MODULES, ON_POSTGRES, ONLY_FUNCTIONS, ROOT, slug
from tests.mutation.runs import RUN_FILE, SCRATCH, has_functions, outcomes, prepare, record, run, run_facts, string_only
from tests.mutation.scoring import (
    EQUIVALENT,
    KILLED,
    MEETS,
    NOTHING,
    SCORES,
    TARGET,
    TARGETS,
    entry,
    equivalent_key,
    function_of,
    functions_of,
    read_scores,
    score,
    write_entry,
)
from tests.mutation.staleness import blob, commit, git, stale, test_blobs, test_files
from tests.mutation.warm import OURS, run_module_level, warm_runner

__all__ = [
    "DECORATED_PREFIX", "EMPTIED_PREFIX", "EQUIVALENT", "KILLED", "MEETS", "MODULES", "NOTHING", "ONLY_FUNCTIONS",
    "ON_POSTGRES", "OURS", "ROOT", "RUN_FILE", "SCORES", "SCRATCH", "TARGET", "TARGETS", "TOP_PREFIX", "blob",
    "commit", "decorated_mutants", "emptied_mutants", "entry", "equivalent_key", "function_of", "functions_of", "git",
    "has_functions", "main", "module_level_mutants", "outcomes", "prepare", "read_scores", "record", "report", "run",
    "run_facts", "run_module_level", "score", "slug", "stale", "string_only", "test_blobs", "test_files",
    "warm_runner", "write_entry",
]
