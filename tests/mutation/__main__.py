"""`python -m tests.mutation`: the command line (`cli.main`); run_module_level starts this file by its path too."""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":
    if not __package__:  # started by its path (the warm runner, in a scratch copy): the checkout takes this
        # folder's place at the head of sys.path, so that `tests.mutation` is found (the warm runner then puts the
        # scratch copy before it)
        sys.path[0] = str(Path(__file__).resolve().parents[2])
    from tests.mutation.cli import main

    sys.exit(main())
