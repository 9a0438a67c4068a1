"""Every test here launches real processes (`python -m bot`) or waits on real time by nature (a model streaming at
its own pace): marked `e2e`, left out of the fast local loop."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent
E2E_TIMEOUT_S = 600  # a whole discussion with restarts: minutes on a busy machine, still bounded


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.timeout(E2E_TIMEOUT_S))
