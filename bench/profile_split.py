"""Where the app's CPU went: a py-spy profile (speedscope JSON, `bench/load.py --profile`) split into the libraries
bench/library_floor.py times and the app's own wings, in milliseconds a model call.

A sample counts for a library when any frame of its stack is in that library (the first of the anthropic SDK,
slack_sdk and SQLAlchemy, in that order, that it finds): its cost includes what the app asked of it, as the floor's
does. Otherwise it counts for the deepest frame of the app's own code (its wing: core/running, adapters/slack, ...),
and with none (bot/ holds the entry point every stack starts from), for the event loop and the HTTP library under
it. Set beside the floor's parts, the split says how much of the app's excess over the floor is the libraries used
more heavily, and how much the app's own code.

    python bench/profile_split.py p.json --calls 11400
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[1])  # the checkout the profiled app ran from
# A library's name as the floor prints it, by the package folders its frames live in.
LIBRARIES = (("anthropic SDK", ("/anthropic/", "/httpx/", "/httpx2/")), ("slack_sdk", ("/slack_sdk/", "/slack_bolt/")),
             ("SQLAlchemy", ("/sqlalchemy/",)))
WINGS = ("core/", "adapters/")
REST = "the event loop, aiohttp and the rest"


def part(files: list[str], root: str = ROOT) -> str:
    """The part one sample's stack (its frames' files, outermost first) counts for; `root`: the app's checkout."""
    for name, folders in LIBRARIES:
        if any(folder in f for f in files for folder in folders):
            return name
    for f in reversed(files):
        path = f.removeprefix(root.rstrip("/") + "/")
        if path != f and path.startswith(WINGS):
            parts = path.split("/")
            return "app: " + "/".join(parts[:2]) if len(parts) > 2 else "app: " + path
    return REST


def split(profile: Path, root: str = ROOT) -> Counter[str]:
    """CPU seconds by part, over every thread of the profile (py-spy records busy samples only)."""
    data = json.loads(profile.read_text())
    frames = data["shared"]["frames"]
    seconds: Counter[str] = Counter()
    for thread in data["profiles"]:
        for stack, weight in zip(thread["samples"], thread["weights"], strict=True):
            seconds[part([frames[i].get("file", "") for i in stack], root)] += weight
    return seconds


def lines(seconds: Counter[str], calls: int) -> list[str]:
    total = sum(seconds.values()) or 1.0
    out = [f"the app's CPU by part ({total:.1f} s sampled, {calls} model calls): ms a model call, share"]
    out += [f"  {s * 1000 / max(calls, 1):6.2f}  {s / total:4.0%}  {name}" for name, s in seconds.most_common()]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("profile", type=Path, help="a speedscope profile py-spy wrote")
    parser.add_argument("--calls", type=int, default=1, help="model calls the profiled process made")
    args = parser.parse_args()
    print("\n".join(lines(split(args.profile), args.calls)))


if __name__ == "__main__":
    main()
