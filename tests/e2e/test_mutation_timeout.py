"""The mutation tool stops a module-level mutant that hangs its tests, and counts it killed (a timeout)."""

from __future__ import annotations

from pathlib import Path

from tests import mutation
from tests.test_mutation_tool import _demo_row


def test_a_mutant_that_hangs_its_tests_is_stopped_at_the_timeout(tmp_path: Path) -> None:
    _demo_row(tmp_path, "HANGS = False\n\n\ndef over(n):\n    if HANGS:\n        import time\n"
                        "        time.sleep(600)\n    return n > 3\n")
    found = mutation.run_module_level("core/demo_rules.py", tmp_path, tests=["tests/test_demo_rules.py"],
                                      timeout_s=20)
    assert found == {"<module>.HANGS__const_1": "timeout"}
