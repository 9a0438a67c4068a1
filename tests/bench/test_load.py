"""bench/load.py's own arithmetic: where the rounds' ratio can be judged. (Its runs, which wait on real processes,
are in tests/e2e/test_bench_load.py.)"""

from __future__ import annotations

from bench.load import MAX_FLOOR_RATIO, no_room


def test_the_rounds_ratio_is_judged_only_where_an_app_at_its_cpu_target_fits_the_time_it_allows() -> None:
    assert MAX_FLOOR_RATIO == 1.6  # the figures below assume the 1.6x
    # 300 calls at 4 ms of floor: an app at 1.6x the floor needs 1.92 s of one core.
    assert no_room(4.0, 300, 1, 2, within_s=1.925) == ""
    assert "needs 1.9 s of CPU for its 300 calls, more than the 1.9 s" in no_room(4.0, 300, 1, 2, within_s=1.915)
    # Three replicas on two cores: each app gets two thirds of a core for its third of the calls (0.64 s).
    assert no_room(4.0, 300, 3, 2, within_s=0.961) == ""
    assert no_room(4.0, 300, 3, 2, within_s=0.959) != ""
    # Two replicas on two cores: a whole core each, never more.
    assert no_room(4.0, 300, 2, 2, within_s=0.961) == "" and no_room(4.0, 300, 2, 4, within_s=0.959) != ""
