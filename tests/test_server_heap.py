"""A server's heap once it is built: what it will need while serving is loaded, then kept out of the garbage
collector's full passes."""

from __future__ import annotations

import subprocess
import sys


def test_a_server_loads_the_chart_library_before_freezing_its_heap() -> None:
    """Loaded at the first closing instead, matplotlib cost a tenth of round 3's CPU with 60 discussions (its
    imports, in a worker thread holding the lock the event loop needs), and its objects, made after the freeze,
    were walked by every full collection from then on."""
    probe = ("import sys\nfrom bot.runtime import settle_heap\nloaded = 'matplotlib.figure' in sys.modules\n"
             "settle_heap()\nprint(loaded, 'matplotlib.figure' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.split() == ["False", "True"], out.stderr  # not at import: a console never draws one
