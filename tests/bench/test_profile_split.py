"""bench/profile_split.py: a profile's samples counted for the library in their stack, else for the app's wing whose
code they ran, else for the event loop; in milliseconds a model call."""

from __future__ import annotations

import json
from pathlib import Path

from bench.profile_split import REST, lines, split

SITE = "/venv/lib/python3.11/site-packages"
ROOT = "/checkout"
MAIN = f"{ROOT}/bot/__main__.py"  # every stack of the app starts at its entry point


def _profile(tmp_path: Path, samples: list[tuple[list[str], float]]) -> Path:
    files = sorted({f for stack, _ in samples for f in stack})
    index = {f: i for i, f in enumerate(files)}
    data = {"shared": {"frames": [{"name": f"f{i}", "file": f} for i, f in enumerate(files)]},
            "profiles": [{"samples": [[index[f] for f in stack] for stack, _ in samples[:-1]],
                          "weights": [w for _, w in samples[:-1]]},
                         {"samples": [[index[f] for f in samples[-1][0]]], "weights": [samples[-1][1]]}]}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    return path


def test_each_sample_counts_for_the_library_it_was_in_else_for_the_app_code_that_ran_it(tmp_path: Path) -> None:
    samples = [
        ([MAIN, f"{ROOT}/core/running/driver.py", f"{SITE}/anthropic/_streaming.py"], 2.0),
        # Streaming a turn while recording it: the SDK's, as the first library the floor names.
        ([MAIN, f"{ROOT}/core/running/driver.py", f"{SITE}/anthropic/_models.py", f"{SITE}/sqlalchemy/sql/x.py"], 1.0),
        ([MAIN, f"{ROOT}/core/storage/discussions.py", f"{SITE}/sqlalchemy/engine/base.py"], 1.5),
        ([MAIN, f"{ROOT}/adapters/slack/chat.py", f"{SITE}/slack_sdk/web/base.py", f"{SITE}/aiohttp/client.py"], 0.5),
        ([MAIN, f"{ROOT}/core/running/driver.py", f"{ROOT}/core/deliberation/flows/base.py"], 0.25),
        ([MAIN, f"{ROOT}/core/running/driver.py", f"{ROOT}/core/deliberation/prompts.py"], 0.5),
        ([MAIN, f"{ROOT}/core/llm.py"], 0.25),
        ([MAIN, f"{SITE}/aiohttp/client_proto.py"], 0.5),  # a callback of the loop: no code of the app's below it
        ([MAIN, "/elsewhere/core/x.py"], 0.25),  # a folder named core outside the app's checkout is not the app
        ([f"{ROOT}/bench/sql_count.py", f"{SITE}/uvloop/x.py"], 0.25),  # the bench's wrapper is not the app
        ([f"{ROOT}/core/running/live.py"], 1.0),  # another thread's profile
    ]
    parts = split(_profile(tmp_path, samples), root=ROOT)
    assert dict(parts) == {"anthropic SDK": 3.0, "SQLAlchemy": 1.5, "slack_sdk": 0.5, "app: core/deliberation": 0.75,
                           "app: core/llm.py": 0.25, REST: 1.0, "app: core/running": 1.0}
    shown = lines(parts, calls=500)
    assert shown[0] == "the app's CPU by part (8.0 s sampled, 500 model calls): ms a model call, share"
    assert shown[1] == "    6.00   38%  anthropic SDK"  # 3 s over 500 calls, 3 of 8 s
    assert shown[-1] == "    0.50    3%  app: core/llm.py"
