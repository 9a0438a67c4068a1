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

import argparse
import ast
import fcntl
import importlib
import importlib.abc
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCRATCH = Path("/tmp/council-mutation")
SCORES = ROOT / "tests" / "mutation_scores.json"
TARGET = 0.90  # of the whole score: every mutant counts, but those listed below by name as equivalent
TARGETS: dict[str, float] = {}  # a module held to another target (none is)
# Mutants no test can kill because they change nothing the code does, by name with the reason; they are left out
# of the whole score's count. A name here that a run no longer produces is ignored. A module-level or decorated
# mutant is listed after its module's dotted name (`core.when.cron.<module>.MONTHS__const_1`; see `equivalent_key`).
EQUIVALENT: dict[str, str] = {
    "core.deliberation.links.x__code__mutmut_8": "`if kept or True`: every address the pattern finds starts with a "
                                                 "letter or digit, which the trailing punctuation cut never takes, "
                                                 "so `kept` is never empty",
    "core.deliberation.evidence.x__number__mutmut_1": "`.lower()` to `.upper()`: both sides of the comparison go "
                                                      "through `_number`, whose pattern keeps ASCII letters only, "
                                                      "so either case compares the same",
    **{f"core.deliberation.choices.x_is_hedge__mutmut_{n}": "`re.split`'s `maxsplit` dropped or raised: only "
       "the first piece is read, and it is the same however many splits follow it" for n in (10, 14)},
    "core.deliberation.context.x__cut__mutmut_15": "the search starts at a limit of 1, not 0: a limit under the "
                                                   "stub's floor of 200 is refused either way",
    "core.deliberation.context.x__cut__mutmut_21": "`mid` rounded up by two, not one: it still falls in (low, high], "
                                                   "and any split of that range finds the same largest fitting limit",
    "core.deliberation.context.x__cut__mutmut_33": "`MIN_CUT / 2` for `// 2`: 200.0 and 200 compare alike with a "
                                                   "whole number of characters",
    # steps: values that only a branch never taken reads, or that read the same as what they replace
    "core.running.steps.x\u01c1Steps\u01c1run__mutmut_22": "`load_state` is given the discussion it just read "
                                                          "(`d=d`): its id is read only when no discussion is given",
    **{f"core.running.steps.x\u01c1Steps\u01c1run__mutmut_{n}": "the link passed with a transition that does not "
       "finish the discussion: `_transit` reads it only for the record of one that does" for n in (68, 74)},
    "core.running.steps.x\u01c1Steps\u01c1run__mutmut_35": "`seated = None` for `False`: it is read only as a "
                                                          "truth value (`queued or seated`)",
    "core.running.steps.x\u01c1Steps\u01c1_link__mutmut_12": "`link = None` for `\"\"` after a failed look-up: "
                                                            "it is read only as `link or <the page's link>`",
    "core.running.steps.x\u01c1Steps\u01c1_transit__mutmut_82": "`blocked_post(d, None, …)` for `[]`: the failed "
                                                               "turns are read only as a truth value there",
    # seat_waits: a drain claims every post (its attempt counted) before it sends it, so no sent post has 0 attempts
    "core.storage.seat_waits.x\u01c1SeatRepo\u01c1drop_post__mutmut_9": "`o.sent.is_(False)` dropped: a post is "
                                                                       "claimed, its attempts counted, before it is "
                                                                       "sent, so `attempts == 0` already excludes "
                                                                       "every sent post",
    "core.storage.seat_waits.x\u01c1SeatRepo\u01c1add_seat_wait__mutmut_3": "`on_conflict_do_nothing` without its "
                                                                           "target: the turn key, the primary key, "
                                                                           "is the table's one unique constraint",
    **{f"core.storage.seat_waits.x\u01c1SeatRepo\u01c1save_seat_wait__mutmut_{n}": "`turn_key` no longer left out "
       "of the values: the row is the one whose `turn_key` is this, so it is set to what it already is"
       for n in (6, 7, 8)},
    # installs: the reseal's reads, the cache's counters and first check, and finds of nothing
    **{f"adapters.slack.installs.x_reseal__mutmut_{n}": "`meta.reflect` of every table, not only the one read: the "
       "table taken from it is the same" for n in (12, 14)},
    **{f"adapters.slack.installs.x_reseal__mutmut_{n}": "`zip` not strict: the row was selected as the id and "
       "exactly these columns, so both sides are always as long" for n in (23, 26, 28)},
    **{f"adapters.slack.installs.x\u01c1ExpiringInstallations\u01c1{f}__mutmut_{n}": "`_forgotten` is only "
       "compared with a copy taken before a find: any change, by any step from any start, tells it the cache was "
       "emptied meanwhile" for f, n in (("__init__", 10), ("_forget", 2), ("_forget", 3))},
    **{f"adapters.slack.installs.x\u01c1ExpiringInstallations\u01c1__init____mutmut_{n}": "the first check: "
       "the cache is emptied unless the version read equals the one seen last, and no version (an int) equals "
       "None; so it empties whether or not it was marked stale, and `_seen` starts as anything but a version"
       for n in (5, 6, 7)},
    "adapters.slack.installs.x\u01c1SealedInstallations\u01c1_apply__mutmut_8": "`getattr` without its default: "
                                                                              "every name it reads is a field of "
                                                                              "slack_sdk's Bot and Installation",
    **{f"adapters.slack.installs.x\u01c1SealedInstallations\u01c1{f}__mutmut_2": "`_apply(None, …)` for a find "
       "of nothing: a copy of None has none of the fields, so it returns None as the guard did"
       for f in ("async_find_bot", "async_find_installation")},
    # module-level names that nothing reads as text: an enum's values compared only as members, an `__all__` that
    # no star import reads
    **{f"core.control.permissions.<module>.Act.{a}__const_1": "an Act's value is never shown nor compared with "
       "text: `act_of` returns members and `check` compares members, which stay distinct whatever their values"
       for a in ("TAKE_PART", "STEER", "MODERATE", "DIGEST", "ADMIN")},
    **{f"core.deliberation.engine.<module>.__all____const_{n}": "`__all__` is read only by a star import, and "
       "nothing imports the engine with one" for n in range(1, 10)},
    "core.deliberation.stances.<module>.Row.counted__const_1": "`Row.counted`'s default: the one place that "
                                                                "makes rows (`stances.table`) passes `counted=`",
    **{f"core.deliberation.seats.<module>.SEAT_ROLE__const_{n}": "the moderated and open flows' seat role is the "
       "expert's, which is also what `SEAT_ROLE.get` gives a flow not listed" for n in (1, 4)},
    # schedules: an update that never reads its time, and a protocol's default
    **{f"core.control.schedules.x\u01c1Schedules\u01c1{f}__mutmut_{n}": "`upsert_schedule(…, None)` for a row "
       "read in this transaction by its key: `now` is read only to date a row inserted, and this one is updated"
       for f, n in (("schedule_round", 30), ("set_digest", 33), ("_start_round", 12))},
    **{f"core.control.schedules.x\u01c1Schedules\u01c1_written__mutmut_{n}": "how the digest's words are dumped "
       "to be kept: `digest.render` makes a post of strings, a bool and empty lists, which every mode dumps alike "
       "(an unknown mode dumps as python's), and of no files (`files` kept as `[]` or left out reads back as `[]`, "
       "and is set afresh before sending)" for n in (50, 51, 52, 53, 54, 55, 56, 57)},
    "core.control.schedules.x\u01c1Schedules\u01c1_written__mutmut_74": "`held = ''` for `held = None`: only "
                                                                       "`if held:` reads it after, and both are "
                                                                       "false",
    "core.control.schedules.x\u01c1Steering\u01c1choose__mutmut_1": "the default of a Protocol's method: "
                                                                   "nothing calls the protocol's body, the "
                                                                   "service's own `choose` has its default",
    # live: defaults no path reaches, and a task's name
    **{f"core.running.live.x\u01c1ChannelBudget\u01c1allow__mutmut_{n}": "the default of `_last.get`: a turn "
       "known in a channel was let through there once, which set the channel's last edit, and nothing removes it"
       for n in (18, 20, 23)},
    "core.running.live.x\u01c1ChannelBudget\u01c1forget__mutmut_5": "`or` to `and`: a turn's channel leaves "
                                                                  "`_turns` only when its last turn is forgotten, "
                                                                  "which forgets that turn's channel too",
    "core.running.live.x\u01c1ChannelBudget\u01c1forget__mutmut_10": "`pop(key)` without its default: a turn is in "
                                                                   "its channel's turns from its first words until "
                                                                   "this forgets both",
    "core.running.live.x\u01c1LiveText\u01c1__init____mutmut_3": "`_parts = None`: only `push` starts the task that "
                                                               "reads it, having set it first",
    "core.running.live.x\u01c1LiveText\u01c1__init____mutmut_5": "`(None, 1)`: the count is compared only once the "
                                                               "list shown is the list pushed, never None",
    "core.running.live.x\u01c1LiveText\u01c1__init____mutmut_9": "`float('-INF')` is `float('-inf')`",
    **{f"core.running.live.x\u01c1LiveText\u01c1push__mutmut_{n}": "the task's name: shown only in asyncio's debug "
       "output, read by nothing" for n in (16, 18, 19, 20)},
    # closings: a zip of equal lengths, ties no two live ballots make, defaults never read
    **{f"core.deliberation.closings.x_ranking_text__mutmut_{n}": "`zip` not strict: `placed` gives one id per item "
       "of the ranking, so both sides are always as long" for n in (14, 17, 18)},
    "core.deliberation.closings.x_people_choices__mutmut_29": "`>=` to `>`: (time, poll id) ties only within one "
                                                              "poll, where a voter has one live ballot (the live "
                                                              "ballots' index is unique per poll and voter)",
    "core.deliberation.closings.x_people_choices__mutmut_30": "`seen[:3]`: the pair compared with the triple "
                                                              "differs from `seen[:2]` only when the first two are "
                                                              "equal, which no two live ballots of a voter are",
    **{f"core.deliberation.closings.x_recommendation__mutmut_{n}": "`reasons.get`'s default: a ranked id is one an "
       "owner placed, and `owner_ballots` gives every placed id a reason (the owner's name at least)"
       for n in (43, 45, 46)},
    "core.deliberation.closings.x_people_beside_owners__mutmut_60": "`next(…, None)` for `\"\"`: either is "
                                                                    "compared with the people's top option, an id "
                                                                    "the tally gave, which is never empty or None",
    # meeting: agreement needs two, round 0 holds no stance, every voter an owner, a persona `_task` never reads
    "core.deliberation.flows.meeting.x_converged__mutmut_31": "`max(…, default=1)`: with no option chosen the top "
                                                              "count is 0 or 1, both under the two agreement needs",
    "core.deliberation.flows.meeting.x_steelman_round__mutmut_4": "`1 <= round_`: round 1 would ask whether the "
                                                                  "owners agreed in round 0, where no turn records a "
                                                                  "stance, so it is no steelman round either way",
    **{f"core.deliberation.flows.meeting.x_{f}__mutmut_8": "`and` for `or`: a meeting's voters are its owners, every "
       "one counted, and a row's choice is never empty (undecided at least)"
       for f in ("_position_lines", "_position_prompt_lines")},
    **{f"core.deliberation.flows.meeting.x\u01c1Meeting\u01c1task__mutmut_{n}": "`_task` is given None for the "
       "persona: it never reads it (the other owners' names come in `others`)" for n in (27, 37)},
    **{f"core.deliberation.flows.meeting.x\u01c1Meeting\u01c1tier__mutmut_{n}": "`TIERS.get`'s default: a "
       "discussion's tier is a Literal of exactly TIERS' keys" for n in (6, 8)},
    # open floor: speeches at even steps, bids at odd ones; counts kept for every participant; ranks never tie
    "core.deliberation.flows.open_floor.x_winner__mutmut_16": "`<=` for `<`: the step asked is a bid's (odd), and "
                                                              "no speech (even steps) sits at it",
    **{f"core.deliberation.flows.open_floor.x_winner__mutmut_{n}": "`counts.get`'s default: `counts` has every "
       "participant, and the people ranked are among them" for n in (96, 98, 99, 114, 116, 117)},
    "core.deliberation.flows.open_floor.x_winner__mutmut_103": "`>=` for `>`: a rank ends with the bidder's own "
                                                               "place (`-i`), so no two ranks are equal",
    "core.deliberation.flows.open_floor.x\u01c1OpenFloor\u01c1task__mutmut_108": "`spoken(…).get`'s default: a "
                                                                            "speech's speaker is one `winner` "
                                                                            "chose among the participants, and "
                                                                            "`spoken` counts every participant",
    # lease, driver: the names of the tasks they start
    **{f"core.running.lease.x\u01c1Lease\u01c1hold__mutmut_{n}": "the heartbeat task's name: shown only in asyncio's "
       "debug output and task listings, read by nothing" for n in (6, 8, 9, 10)},
    **{f"core.running.lease.x\u01c1Lease\u01c1_heartbeat__mutmut_{n}": "the default of `expires.get` when a renewal "
       "fails: every discussion whose work is held had its expiry set by `take` before `hold`, and `let_go` drops "
       "both together, so it is never read" for n in (33, 35, 36)},
    **{f"core.running.driver.x\u01c1Driver\u01c1{f}__mutmut_{n}": "a task's name: shown only in asyncio's debug "
       "output and task listings, read by nothing" for f, n in (("kick", 13), ("kick", 15), ("drive", 14),
                                                              ("drive", 16), ("drive", 65), ("drive", 67))},
    **{f"core.running.driver.x\u01c1Driver\u01c1drive__mutmut_{n}": "`_tasks.pop(id)` without its default: `drive` "
       "runs only in the task `kick` or a drive-later stored under the discussion's id, which nothing else removes "
       "before it ends" for n in (11, 51)},
    **{f"core.running.driver.x\u01c1Driver\u01c1{f}__mutmut_{n}": "`_closing = None` for False: it is only read "
       "for its truth" for f, n in (("__init__", 4), ("shutdown", 23))},
    # `__all__` (its names XX-wrapped): it names only what `from module import *` takes, and no module is imported
    # so anywhere in this repository (the driver's re-exports are imported by name)
    **{f"core.running.driver.<module>.__all____const_{n}": "`__all__` is read only by `import *`, which nothing "
       "here uses" for n in (1, 2, 3, 4)},
    "core.running.steps.x\u01c1Steps\u01c1apply__mutmut_7": "the link of a transition that does not finish the "
                                                       "discussion: `_transit` reads it only to record a finished "
                                                       "discussion's decision, under the same condition",
}

# Each rule module, and the tests that pin it (mutmut runs, per mutant, those of them that reach its function). A
# row names the tests of the module's rules; a whole discussion run through a chat only passes through most modules
# and would run for every mutant (a seated person's discussions: 38 s a mutant, where the seat wait rules take 0.6 s).
MODULES: dict[str, list[str]] = {
    "core/control/permissions.py": ["tests/core/control/test_permission_rules.py",
                                    "tests/core/control/test_permissions.py", "tests/core/control/test_digest_rules.py",
                                    "tests/core/control/test_channel_config.py", "tests/core/test_rules_that_broke.py",
                                    "tests/core/control/test_refusal_words.py"],
    "core/control/guard.py": ["tests/core/control/test_spending.py", "tests/core/control/test_limits_race.py",
                              "tests/core/control/test_reads_after_checks.py", "tests/core/control/test_permissions.py",
                              "tests/core/control/test_guard.py", "tests/core/test_rules_that_broke.py"],
    "core/running/spending.py": ["tests/core/running/test_spending_rules.py", "tests/core/control/test_spending.py",
                                 "tests/core/test_rules_that_broke.py", "tests/core/running/test_spending_defaults.py"],
    "core/deliberation/stances.py": ["tests/core/deliberation/test_stances.py", "tests/core/test_rules_that_broke.py",
                                     "tests/core/deliberation/test_stance_rules.py",
                                     "tests/core/deliberation/test_verdicts.py",
                                     "tests/core/deliberation/test_one_vocabulary.py",
                                     "tests/core/deliberation/test_vocabulary_edges.py",
                                     "tests/core/deliberation/test_stance_row_words.py",
                                     "tests/core/deliberation/test_stance_lines.py"],
    "core/deliberation/choices.py": ["tests/core/deliberation/test_one_vocabulary.py",
                                     "tests/core/deliberation/test_vocabulary_edges.py",
                                     "tests/core/deliberation/test_vocabulary_words.py"],
    "core/deliberation/tally.py": ["tests/core/deliberation/test_tally.py", "tests/core/deliberation/test_verdicts.py"],
    "core/deliberation/quoting.py": ["tests/core/deliberation/test_hostile_prompts.py",
                                     "tests/core/deliberation/test_quoting.py"],
    "core/showing/pages.py": ["tests/core/showing/test_pages.py", "tests/adapters/web/test_page_rules.py",
                              "tests/core/showing/test_page_link_rules.py"],
    "core/deliberation/context.py": ["tests/core/deliberation/test_context.py",
                                     "tests/core/deliberation/test_people_budget.py",
                                     "tests/core/deliberation/test_people_budget_limits.py",
                                     "tests/core/deliberation/test_people_budget_rules.py",
                                     "tests/core/control/test_flood.py"],
    "core/storage/activity.py": ["tests/core/storage/test_activity.py", "tests/core/storage/test_activity_rules.py",
                                 "tests/core/showing/test_digest_activity.py",
                                 "tests/core/control/test_limits_race.py", "tests/core/control/test_spending.py"],
    "core/storage/channel_rows.py": ["tests/core/storage/test_channel_rows.py",
                                     "tests/core/showing/test_digest_activity.py",
                                     "tests/core/test_rules_that_broke.py"],
    # the driver, split into its parts: each row covers every function of its module
    "core/running/lease.py": ["tests/core/running/test_lease_rules.py", "tests/core/running/test_lease.py"],
    "core/running/outbox.py": ["tests/core/running/test_outbox_rules.py", "tests/core/running/test_outbox.py"],
    "core/running/driver.py": ["tests/core/running/test_driver_rules.py"],
    "core/running/steps.py": ["tests/core/running/test_step_rules.py", "tests/core/running/test_steps.py",
                              "tests/core/running/test_step_edges.py"],
    "core/running/turns.py": ["tests/core/running/test_turn_rules.py", "tests/core/running/test_turns.py"],
    "core/running/placeholders.py": ["tests/core/running/test_placeholders.py",
                                     "tests/core/running/test_placeholder_rules.py"],
    # what guards the prompts against what people write, and what they are built from
    "core/deliberation/links.py": ["tests/core/deliberation/test_link_rules.py"],
    "core/deliberation/prompts.py": ["tests/core/deliberation/test_step_prompts.py",
                                     "tests/core/deliberation/test_hostile_prompts.py",
                                     "tests/core/deliberation/test_pure.py",
                                     "tests/core/deliberation/test_context.py",
                                     "tests/core/deliberation/test_prompt_rules.py",
                                     "tests/core/deliberation/test_prompt_build.py"],
    # seats
    "core/deliberation/seats.py": ["tests/core/running/test_seats.py", "tests/core/deliberation/test_holders.py",
                                   "tests/core/deliberation/test_seat_rules.py",
                                   "tests/core/deliberation/test_seat_words.py"],
    "core/deliberation/seating.py": ["tests/core/running/test_seats.py", "tests/core/deliberation/test_council.py",
                                     "tests/core/deliberation/test_seating_rules.py"],
    "core/deliberation/holders.py": ["tests/core/deliberation/test_holders.py", "tests/core/running/test_seats.py",
                                     "tests/core/deliberation/test_holder_rules.py"],
    "core/running/seat_turns.py": ["tests/core/running/test_seats.py", "tests/core/running/test_seat_turn_rules.py"],
    "core/storage/seat_waits.py": ["tests/core/storage/test_seat_wait_rules.py",
                                   "tests/core/storage/test_decisions.py"],
    # decision visibility
    "core/control/recall.py": ["tests/core/control/test_memory.py", "tests/adapters/slack/test_decisions.py",
                               "tests/core/control/test_recall_rules.py"],
    "core/storage/decisions.py": ["tests/core/storage/test_decisions.py", "tests/core/control/test_memory.py",
                                  "tests/adapters/slack/test_decisions.py", "tests/core/control/test_recall_rules.py",
                                  "tests/core/storage/test_decision_rules.py"],
    "core/deliberation/factcheck.py": ["tests/core/deliberation/test_factcheck.py",
                                       "tests/adapters/slack/test_check.py",
                                       "tests/core/deliberation/test_factcheck_rules.py"],
    "core/deliberation/evidence.py": ["tests/core/deliberation/test_evidence.py",
                                      "tests/core/deliberation/test_evidence_rules.py"],
    # budgets and rate limits
    "core/running/budget.py": ["tests/core/running/test_budget.py", "tests/core/running/test_rate_leases.py"],
    "core/storage/rate_rows.py": ["tests/core/running/test_budget.py", "tests/core/running/test_rate_leases.py",
                                  "tests/core/storage/test_rate_row_rules.py"],
    "core/storage/reservations.py": ["tests/core/control/test_spending.py", "tests/core/control/test_limits_race.py",
                                     "tests/core/control/test_spending_worst_case.py",
                                     "tests/core/storage/test_activity.py",
                                     "tests/core/storage/test_activity_rules.py"],
    "core/running/admission.py": ["tests/core/running/test_admission.py",
                                  "tests/core/running/test_admission_rules.py"],
    "core/running/live.py": ["tests/core/running/test_live.py", "tests/core/running/test_live_rules.py",
                             "tests/core/running/test_live_edges.py"],
    # encryption
    "core/storage/sealing.py": ["tests/core/storage/test_sealing_rules.py"],
    "adapters/slack/installs.py": ["tests/adapters/slack/test_secrets_at_rest.py",
                                   "tests/adapters/slack/test_installs_cache.py",
                                   "tests/adapters/slack/test_install_rules.py",
                                   "tests/adapters/slack/test_install_deletes.py"],
    # time
    "core/when/timeparse.py": ["tests/core/when/test_timeparse.py", "tests/core/when/test_time_words.py"],
    "core/when/cron.py": ["tests/core/when/test_timeparse.py", "tests/core/control/test_digest_rules.py",
                          "tests/core/when/test_cron_names.py"],
    "core/control/schedules.py": ["tests/core/control/test_schedule_mutants.py",
                                  "tests/core/control/test_schedule_rules.py", "tests/core/control/test_schedules.py"],
    # the flows' rules
    "core/deliberation/engine.py": ["tests/core/deliberation/test_engine.py", "tests/core/deliberation/test_flows.py",
                                    "tests/core/deliberation/test_engine_rules.py"],
    "core/deliberation/flows/meeting.py": ["tests/core/deliberation/test_meeting_and_floor.py",
                                           "tests/core/deliberation/test_honest_meetings.py",
                                           "tests/core/deliberation/test_meeting_rules.py",
                                           "tests/core/deliberation/test_meeting_edges.py",
                                           "tests/core/deliberation/test_meeting_labels_quoted.py"],
    "core/deliberation/flows/open_floor.py": ["tests/core/deliberation/test_open_floor.py",
                                              "tests/core/deliberation/test_meeting_and_floor.py",
                                              "tests/core/deliberation/test_floor_rules.py",
                                              "tests/core/deliberation/test_verdict_note.py",
                                              "tests/core/deliberation/test_floor_edges.py"],
    "core/deliberation/closings.py": ["tests/core/deliberation/test_honest_meetings.py",
                                      "tests/core/deliberation/test_ballots.py",
                                      "tests/core/deliberation/test_closing_rules.py",
                                      "tests/core/deliberation/test_closing_edges.py"],
    # settings
    "core/control/commands.py": ["tests/core/control/test_control.py", "tests/adapters/slack/test_translate.py",
                                 "tests/core/control/test_command_tables.py"],
    "core/control/defaults.py": ["tests/core/control/test_channel_defaults.py", "tests/adapters/slack/test_abuse.py",
                                 "tests/core/control/test_defaults_rules.py",
                                 "tests/core/control/test_default_words.py",
                                 "tests/core/control/test_default_edges.py"],
    # Discord's permission refusals
    "adapters/discord/access.py": ["tests/adapters/discord/test_access.py",
                                   "tests/adapters/discord/test_permissions.py",
                                   "tests/adapters/discord/test_access_rules.py",
                                   "tests/adapters/discord/test_forums.py",
                                   "tests/adapters/discord/test_platform_rules.py",
                                   "tests/adapters/discord/test_access_words.py"],
}
# Modules whose tests hold PostgreSQL-only cases (row locks, advisory locks, replicas): measured only with
# TEST_DATABASE_URL set, since a skipped test kills nothing and the score would read lower than the tests are.
ON_POSTGRES = {m for m in MODULES if m.startswith("core/storage/")} | {
    "core/control/recall.py", "core/running/budget.py", "core/running/lease.py", "core/running/outbox.py",
    "core/running/driver.py"}
# Functions left out of a module's run (mutmut's names for them); none is: a row covers all of its module's.
ONLY_FUNCTIONS: dict[str, list[str]] = {}


def slug(module: str) -> str:
    return module.removesuffix(".py").replace("/", ".")


def prepare(module: str) -> Path:
    work = SCRATCH / slug(module)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    for name in ("core", "bot", "adapters", "tests", "bench"):
        shutil.copytree(ROOT / name, work / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    # Some tests read what the project tells its users: copied beside the tree and into mutmut's own copy.
    read_by_tests = [name for name in ("README.md", "app-manifest.yml") if (ROOT / name).exists()]
    for name in read_by_tests:
        shutil.copy2(ROOT / name, work / name)
    tests = [t for t in MODULES[module] if (ROOT / t).exists()]
    pyproject = (ROOT / "pyproject.toml").read_text()
    pyproject += "\n[tool.mutmut]\n" + "\n".join([
        'source_paths = ["core", "bot", "adapters"]',
        f"also_copy = {json.dumps(read_by_tests)}",
        f"only_mutate = [{json.dumps(module)}]",
        f"pytest_add_cli_args_test_selection = {json.dumps(tests)}",
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q"]',
        "use_git_change_detection = false",
        # Each mutant in a fresh fork of a process that never ran the suite: forked from the one that collected
        # the stats, some mutants of async code ran as if unchanged and were counted as survivors.
        'process_isolation = "forkserver"',
    ]) + "\n"
    (work / "pyproject.toml").write_text(pyproject)
    return work


KILLED = ("killed", "timeout")
RUN_FILE = "run.json"  # in a module's scratch copy: the commit measured, the module's blob and mutmut's exit status


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()


def commit() -> str:
    """The commit the tree is at, marked `+changes` when the working tree differs from it (the scores file aside:
    each run rewrites it)."""
    head = git("rev-parse", "--short=12", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".", f":!{SCORES.relative_to(ROOT)}")
    return f"{head}+changes" if dirty else head


def blob(module: str, measured: str) -> str:
    """The git blob of the module as measured: at the commit, or the working file's when it had changes."""
    if measured.endswith("+changes"):
        return git("hash-object", module)
    return git("rev-parse", f"{measured}:{module}")


def _imported_tests(path: Path) -> list[str]:
    """The files of the `tests` package a test file imports (`from tests.fakes.chat import …`, `from tests.fakes
    import chat`): helpers and fakes a test is made of."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
                 if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
        for name in names:
            if name == "tests" or name.startswith("tests."):
                base = name.replace(".", "/")
                out += [f for f in (f"{base}.py", f"{base}/__init__.py") if (ROOT / f).is_file()]
    return out


def test_files(module: str) -> list[str]:
    """What a row's tests are made of: the test files it names, the conftest.py files above each (their fixtures),
    and the test modules they import, helpers and fakes, with what those import in turn. A weakened fixture or fake
    kills less as surely as a weakened test."""
    named = MODULES.get(module, [])
    todo = list(named)
    for test in named:
        folder = Path(test).parent
        while folder.parts:
            todo.append(str(folder / "conftest.py"))
            folder = folder.parent
    found: set[str] = set()
    while todo:
        path = todo.pop()
        if path in found or (path not in named and not (ROOT / path).is_file()):
            continue
        found.add(path)
        if (ROOT / path).is_file():
            todo += _imported_tests(ROOT / path)
    return sorted(found)


def test_blobs(module: str, measured: str) -> dict[str, str]:
    """The git blob of each file the module's tests are made of (`test_files`), as measured ("" for a test file the
    row names that does not exist)."""
    return {t: (blob(t, measured) if (ROOT / t).exists() else "") for t in test_files(module)}


def run(module: str, children: int, scores: Path = SCORES) -> None:
    measured = commit()
    facts = {"commit": measured, "blob": blob(module, measured), "tests": test_blobs(module, measured)}
    work = prepare(module)
    mutmut = str(Path(sys.executable).parent / "mutmut")
    names = [f"*{f}__mutmut_*" for f in ONLY_FUNCTIONS.get(module, [])]
    with (work / "mutmut.log").open("w") as log:  # its progress line, kept out of the terminal
        done = subprocess.run([mutmut, "run", "--max-children", str(children), *names], cwd=work, check=False,
                              stdout=log, stderr=subprocess.STDOUT)
    covered = {function_of(n) for n in outcomes(module)} | {function_of(n) for n, _ in
                                                          decorated_mutants((work / module).read_text())}
    bare = [f for f in functions_of((work / module).read_text()) if f not in covered]
    top = run_module_level(module, work, children, emptied=bare)
    (work / RUN_FILE).write_text(json.dumps({**facts, "exit": done.returncode, "module_level": top}))
    record(module, scores)


# Module-level rules (a compiled pattern, a limit, a table of words) are outside every function, where mutmut
# never mutates. Each constant in a module-level or class-level assignment is mutated here as mutmut would mutate it
# in a function (a string wrapped in "XX", a number moved by one, a truth flipped), and the row's tests run against
# each: killed when they fail.
TOP_PREFIX = "<module>."


def _constant_mutations(value: object) -> list[object]:
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int | float):
        return [value + 1]
    if isinstance(value, str) and value:
        return [f"XX{value}XX"]
    return []


# Calls that name a thing for the type checker or the logs, not a rule: their strings are never mutated.
_DECLARING = {"TypeVar", "NewType", "ParamSpec", "getLogger"}


def _declaration(value: ast.expr) -> bool:
    func = value.func if isinstance(value, ast.Call) else None
    return isinstance(func, ast.Name | ast.Attribute) and (
        func.id if isinstance(func, ast.Name) else func.attr) in _DECLARING


def module_level_mutants(source: str) -> list[tuple[str, str]]:
    """Each mutant of the module's top-level and class-level assignments: (its name, the module's source with it).
    A docstring is no rule and is left alone."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    out: list[tuple[str, str]] = []

    def assignments(body: list[ast.stmt], owner: str) -> None:
        for stmt in body:
            if isinstance(stmt, ast.ClassDef):
                assignments(stmt.body, f"{owner}{stmt.name}.")
            elif (isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None
                  and not _declaration(stmt.value)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                name = owner + "_".join(ast.unparse(t) for t in targets)
                for i, node in enumerate(n for n in ast.walk(stmt.value) if isinstance(n, ast.Constant)):
                    last, last_col = node.end_lineno or node.lineno, node.end_col_offset or 0
                    for changed in _constant_mutations(node.value):
                        start = offsets[node.lineno - 1] + len(
                            lines[node.lineno - 1].encode()[:node.col_offset].decode())
                        end = offsets[last - 1] + len(lines[last - 1].encode()[:last_col].decode())
                        out.append((f"{TOP_PREFIX}{name}__const_{i + 1}",
                                    source[:start] + repr(changed) + source[end:]))

    assignments(tree.body, "")
    return out


# mutmut leaves a decorated function alone (its copies would run the decorator again): a cached lookup, a context
# manager, a property. Those are mutated here, with mutmut's main operators: a constant changed as above, a
# comparison turned to its neighbour or its negation, `and` and `or` swapped, a `not` dropped, `+` and `-` swapped.
DECORATED_PREFIX = "<decorated>."
_SWAPS: dict[type, type] = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
                            ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot,
                            ast.IsNot: ast.Is, ast.And: ast.Or, ast.Or: ast.And, ast.Add: ast.Sub, ast.Sub: ast.Add}


def _decorated(tree: ast.Module) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    out = []
    for node in tree.body:
        members = [(node.name + ".", m) for m in node.body] if isinstance(node, ast.ClassDef) else [("", node)]
        for owner, fn in members:
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and fn.decorator_list and not (
                    len(fn.decorator_list) == 1 and isinstance(fn.decorator_list[0], ast.Name)
                    and fn.decorator_list[0].id in ("staticmethod", "classmethod")):
                out.append((owner + fn.name, fn))
    return out


def decorated_mutants(source: str) -> list[tuple[str, str]]:
    """Each mutant of the module's decorated functions: (its name, the module's source with it)."""
    lines = source.splitlines(keepends=True)
    out: list[tuple[str, str]] = []
    for name, fn in _decorated(ast.parse(source)):
        first, last = fn.decorator_list[0].lineno - 1, fn.end_lineno or fn.lineno
        indent = " " * fn.col_offset
        body = [n for stmt in fn.body[1 if ast.get_docstring(fn) else 0:] for n in ast.walk(stmt)]
        count = 0
        for index, node in enumerate(body):
            changes: list[object] = []
            if isinstance(node, ast.Constant):
                changes = _constant_mutations(node.value)
            elif isinstance(node, ast.Compare | ast.BoolOp | ast.BinOp) and type(
                    node.ops[0] if isinstance(node, ast.Compare) else node.op) in _SWAPS:
                changes = ["swap"]
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
                changes = ["drop"]
            for change in changes:
                copy = ast.parse(source)
                target = dict(_decorated(copy))[name]
                mutated = [n for stmt in target.body[1 if ast.get_docstring(target) else 0:] for n in ast.walk(stmt)]
                _apply(mutated[index], change, target)
                count += 1
                text = "".join(indent + line + "\n" for line in ast.unparse(target).splitlines())
                out.append((f"{DECORATED_PREFIX}{name}#{count}", "".join(lines[:first]) + text + "".join(lines[last:])))
    return out


# A function whose body mutmut has no operator for (`return [LEAD]`) would leave its row short of it: the tool then
# empties it, so that it returns None, and the row's tests must notice.
EMPTIED_PREFIX = "<emptied>."


def _members(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    out: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for node in tree.body:
        members = [(node.name + ".", m) for m in node.body] if isinstance(node, ast.ClassDef) else [("", node)]
        out |= {owner + fn.name: fn for owner, fn in members if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)}
    return out


def emptied_mutants(source: str, names: list[str]) -> list[tuple[str, str]]:
    """For each named function (`f`, `Class.method`), the module's source with its body (its docstring kept) made
    `return None`."""
    lines = source.splitlines(keepends=True)
    out: list[tuple[str, str]] = []
    for name in names:
        fn = _members(ast.parse(source)).get(name)
        if fn is None:
            continue
        first = (fn.decorator_list[0].lineno if fn.decorator_list else fn.lineno) - 1
        fn.body = [*fn.body[:1 if ast.get_docstring(fn) else 0], ast.Return(ast.Constant(None))]
        text = "".join(" " * fn.col_offset + line + "\n" for line in ast.unparse(fn).splitlines())
        out.append((f"{EMPTIED_PREFIX}{name}", "".join(lines[:first]) + text + "".join(lines[fn.end_lineno or 0:])))
    return out


def _apply(node: ast.AST, change: object, fn: ast.AST) -> None:
    if isinstance(node, ast.Constant):
        node.value = change  # type: ignore[assignment]  # one of `_constant_mutations`
    elif isinstance(node, ast.Compare):
        node.ops[0] = _SWAPS[type(node.ops[0])]()
    elif isinstance(node, ast.BoolOp | ast.BinOp):
        node.op = _SWAPS[type(node.op)]()
    elif isinstance(node, ast.UnaryOp):  # `not x` becomes `x`: its parent takes the operand in its place
        for parent in ast.walk(fn):
            for field, value in ast.iter_fields(parent):
                if value is node:
                    setattr(parent, field, node.operand)
                elif isinstance(value, list) and node in value:
                    value[value.index(node)] = node.operand


def run_module_level(module: str, work: Path, children: int = 1, tests: list[str] | None = None,
                     timeout_s: float = 600, emptied: list[str] | None = None) -> dict[str, str]:
    """Each module-level mutant, each mutant of a decorated function, and each `emptied` function emptied, run
    against the row's tests in the scratch copy: killed or survived. One warm process runs them all
    (`warm_runner`)."""
    original = (work / module).read_text()
    mutants = (module_level_mutants(original) + decorated_mutants(original)
               + emptied_mutants(original, emptied or []))
    if not mutants:
        return {}
    tests = tests if tests is not None else [t for t in MODULES[module] if (ROOT / t).exists()]
    spec = {"module": module, "tests": tests, "mutants": mutants, "children": children, "timeout_s": timeout_s}
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--warm-runner"], input=json.dumps(spec),
                          cwd=work, capture_output=True, text=True, check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode or not lines:
        raise RuntimeError(f"the module-level mutants could not be run: {done.stderr[-2000:]}")
    return {str(k): str(v) for k, v in json.loads(lines[-1]).items()}


OURS = ("core", "bot", "adapters", "tests")


class _MutatedSource(importlib.abc.SourceLoader):
    """Serves one module's mutated source from memory, under the file's own name: parallel children each import
    their own mutant of the same file, and no bytecode is cached for it (no `path_stats`)."""

    def __init__(self, path: Path, source: str) -> None:
        self.path, self.source = path, source

    def get_filename(self, fullname: str) -> str:
        return str(self.path)

    def get_data(self, path: str) -> bytes:
        return self.source.encode() if path == str(self.path) else Path(path).read_bytes()


class _MutantFinder(importlib.abc.MetaPathFinder):
    """Finds the mutated module (and only it) ahead of the file on disk."""

    def __init__(self, name: str, loader: _MutatedSource) -> None:
        self.name, self.loader = name, loader

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if fullname != self.name:
            return None
        return importlib.util.spec_from_file_location(fullname, self.loader.path, loader=self.loader)


def warm_runner(spec: dict[str, Any]) -> dict[str, str]:
    """Run in the scratch copy: import the row's tests once, so the libraries they load are loaded (pytest, the
    SQL toolkit, the SDKs: most of a fresh process's start-up), forget the project's own modules, then fork a child
    per mutant that imports them again, the mutated one from memory, and runs the row's tests with pytest."""
    import pytest

    sys.path.insert(0, os.getcwd())  # the scratch copy first: started as a script, its folder came first
    tests, name = list(spec["tests"]), str(spec["module"]).removesuffix(".py").replace("/", ".")
    for test in tests:
        importlib.import_module(test.removesuffix(".py").replace("/", "."))
    for loaded in [m for m in sys.modules if m.split(".")[0] in OURS]:
        del sys.modules[loaded]
    args = ["-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *tests]
    found: dict[str, str] = {}
    waiting = list(spec["mutants"])
    running: dict[int, tuple[str, float]] = {}
    while waiting or running:
        while waiting and len(running) < max(1, int(spec["children"])):
            mutant, source = waiting.pop(0)
            pid = os.fork()
            if pid == 0:  # the child: its output goes nowhere, its exit status is pytest's
                try:
                    sys.dont_write_bytecode = True
                    sys.meta_path.insert(0, _MutantFinder(name, _MutatedSource(Path(spec["module"]).resolve(), source)))
                    quiet = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(quiet, 1)
                    os.dup2(quiet, 2)
                    code = int(pytest.main(args))
                except BaseException:  # an import that fails under the mutant kills it
                    code = 99
                os._exit(code)
            running[pid] = (mutant, time.monotonic())
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            for child, (mutant, started) in list(running.items()):
                if time.monotonic() - started > float(spec["timeout_s"]):
                    os.kill(child, signal.SIGKILL)
                    os.waitpid(child, 0)
                    found[mutant] = "timeout"
                    del running[child]
            time.sleep(0.02)
            continue
        mutant, _ = running.pop(pid)
        code = os.waitstatus_to_exitcode(status)
        # 5: no test ran, which kills nothing; any other failure (a test, an import, a crash) kills it.
        found[mutant] = {0: "survived", 5: "no tests"}.get(code, "killed")
    return found


def run_facts(module: str) -> dict[str, object]:
    path = SCRATCH / slug(module) / RUN_FILE
    return json.loads(path.read_text()) if path.exists() else {}


# A string is text shown to people, and changing it changes nothing the code does, only where it can go nowhere
# else: in what a log call writes, in the message of an exception raised, and in a keyword argument that is a
# post's or a reply's words. Everywhere else a string is logic: a keyword argument's value (`pending="final"`,
# `Post(kind="turn")`), a key (a dict's, a dedupe key built as a positional argument), a compared or returned value,
# what a method is called on (`"".join`) or with (`.split(":")`), a pattern. Within those words, a string the code
# compares, looks up or parses with stays logic, and so does every expression an f-string formats.
_LOGGERS, _LEVELS = {"log", "logger", "logging"}, {"debug", "info", "warning", "error", "exception", "critical"}
_SHOWN = {"text", "title", "message", "hint"}  # keyword arguments that carry what people read
_PARSING = {"startswith", "endswith", "removeprefix", "removesuffix", "partition", "rpartition", "split", "rsplit",
            "replace", "strip", "lstrip", "rstrip", "get", "pop", "setdefault", "index", "find", "count",
            "compile", "sub", "subn", "match", "fullmatch", "search", "findall", "finditer"}


class _Words(ast.NodeTransformer):
    """Blanks the text of strings inside words shown to people; logic inside them stays."""

    def visit_Constant(self, n: ast.Constant) -> ast.AST:
        return ast.Constant(value="") if isinstance(n.value, str | bytes) else n

    def visit_Compare(self, n: ast.Compare) -> ast.AST:
        return n

    def visit_Subscript(self, n: ast.Subscript) -> ast.AST:
        n.value = self.visit(n.value)
        return n

    def visit_Dict(self, n: ast.Dict) -> ast.AST:
        n.values = [self.visit(v) if v is not None else v for v in n.values]
        return n

    def visit_JoinedStr(self, n: ast.JoinedStr) -> ast.AST:
        # its words go, however they are cut; `{n + 1}` in a message is arithmetic and stays
        return ast.JoinedStr(values=[v for v in n.values if isinstance(v, ast.FormattedValue)])

    def visit_Call(self, n: ast.Call) -> ast.AST:
        if isinstance(n.func, ast.Attribute) and n.func.attr in _PARSING:
            return n
        return self.generic_visit(n)


def _blank_strings(node: ast.AST) -> str:
    """A function's code with the words it shows people left out: two that differ only in that wording compare
    equal; any other string is kept, as logic."""
    class Blank(ast.NodeTransformer):
        def visit_Raise(self, n: ast.Raise) -> ast.AST:
            if isinstance(n.exc, ast.Call):
                n.exc.args = [_Words().visit(a) for a in n.exc.args]
                n.exc.keywords = [ast.keyword(arg=k.arg, value=_Words().visit(k.value)) for k in n.exc.keywords]
            return n

        def visit_Call(self, n: ast.Call) -> ast.AST:
            if (isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
                    and n.func.value.id in _LOGGERS and n.func.attr in _LEVELS):
                return ast.Call(func=n.func, args=[], keywords=[])  # a log line, all of it, is a message
            self.generic_visit(n)
            n.keywords = [ast.keyword(arg=k.arg, value=_Words().visit(k.value)) if k.arg in _SHOWN else k
                          for k in n.keywords]
            return n

    copy = Blank().visit(ast.parse(ast.unparse(node)))
    assert isinstance(copy, ast.Module)
    fn = copy.body[0]
    if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
        fn.name = ""
    return ast.dump(copy)


def string_only(module: str) -> set[str]:
    """The module's mutants that change nothing but the text of strings (read from mutmut's mutated copy)."""
    path = SCRATCH / slug(module) / "mutants" / module
    if not path.exists():
        return set()
    functions = {n.name: n for n in ast.walk(ast.parse(path.read_text()))
                 if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and "__mutmut_" in n.name}
    out = set()
    for name, fn in functions.items():
        base, _, n = name.rpartition("__mutmut_")
        orig = functions.get(f"{base}__mutmut_orig")
        if n.isdigit() and orig is not None and _blank_strings(fn) == _blank_strings(orig):
            out.add(name)
    return out


def has_functions(path: Path) -> bool:
    """Whether the module defines any function or method: mutmut mutates nothing else."""
    tree = ast.parse(path.read_text())
    return any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) for n in ast.walk(tree))


def outcomes(module: str) -> dict[str, str]:
    """Each mutant of the module (of its listed functions only, where given) and what became of it."""
    work = SCRATCH / slug(module)
    if not (work / "mutants").exists():
        return {}
    done = subprocess.run([str(Path(sys.executable).parent / "mutmut"), "results", "--all", "true"], cwd=work,
                          capture_output=True, text=True, check=False)
    out = {}
    for line in done.stdout.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep:
            out[name] = status
    only = ONLY_FUNCTIONS.get(module)
    return {n: s for n, s in out.items() if only is None or any(f"{f}__mutmut_" in n for f in only)}


def score(found: dict[str, str]) -> tuple[int, int]:
    """Killed and all: a mutant that was not run (skipped, not checked, no tests) is one the tests did not kill."""
    return sum(s in KILLED for s in found.values()), len(found)


def functions_of(source: str) -> list[str]:
    """The module's functions and methods that hold code to mutate (`f`, `Class.method`): a body of only a
    docstring, `...` or `pass` has none."""
    def has_code(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        body = [b for b in fn.body if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]
        return any(not isinstance(b, ast.Pass) for b in body)

    out = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and has_code(node):
            out.append(node.name)
        elif isinstance(node, ast.ClassDef):
            out += [f"{node.name}.{m.name}" for m in node.body
                    if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef) and has_code(m)]
    return out


def function_of(mutant: str) -> str:
    """The function a mutant is in, named as `functions_of` names it (`<module>` for a module-level rule)."""
    if mutant.startswith(TOP_PREFIX):
        return "<module>"
    if mutant.startswith(EMPTIED_PREFIX):
        return mutant.removeprefix(EMPTIED_PREFIX)
    if mutant.startswith(DECORATED_PREFIX):
        return mutant.removeprefix(DECORATED_PREFIX).rpartition("#")[0]
    name = mutant.rpartition(".")[2].rpartition("__mutmut_")[0]
    if name.startswith("x\u01c1"):
        return ".".join(name[2:].split("\u01c1"))
    return name.removeprefix("x_")


def equivalent_key(module: str, mutant: str) -> str:
    """The mutant's name in EQUIVALENT: mutmut's names carry their module, a module-level or decorated mutant's
    (`<module>.LIMIT__const_1`) does not, so its module's dotted name goes first (one module's `WORDS` is not
    another's)."""
    return (f"{slug(module)}.{mutant}" if mutant.startswith((TOP_PREFIX, DECORATED_PREFIX, EMPTIED_PREFIX))
            else mutant)


MEETS, NOTHING = "meets", "no functions to mutate"


def entry(module: str, facts: dict[str, object], found: dict[str, str], strings: set[str],
          functions: bool, source: str | None = None) -> dict[str, object]:
    """A module's row from its run: the commit, module and tests measured, the functions its mutants cover and
    those they miss, killed of all (the mutants listed as equivalent left out), killed of the logic mutants
    (`strings`, the mutants that change only words shown to people, left out too), the verdict on the whole
    score, and the survivors."""
    row: dict[str, object] = {"commit": facts.get("commit", "-"), "blob": facts.get("blob", ""),
                              "tests": facts.get("tests", {})}
    if not found:
        # Declarations only (models): no rule to break. Otherwise mutmut left nothing to count: not run.
        return {**row, "verdict": NOTHING if facts and not functions else "NOT RUN"}
    if facts.get("exit") != 0:
        return {**row, "verdict": f"MUTMUT FAILED (exit {facts.get('exit')})"}
    covered = sorted({function_of(n) for n in found})
    missed = [f for f in functions_of(source if source is not None else (ROOT / module).read_text())
              if f not in covered]
    equivalent = sorted(n for n in found if equivalent_key(module, n) in EQUIVALENT and found[n] not in KILLED)
    counted = {n: s for n, s in found.items() if n not in equivalent}
    logic = {n: s for n, s in counted.items() if n not in strings}
    killed, total = score(counted)
    logic_killed, logic_total = score(logic)
    meets = (killed / total if total else 1.0) >= TARGETS.get(module, TARGET) and not missed
    survivors = [f"{n}: {s}" + ("" if n in logic else " (strings only)")
                 for n, s in sorted(counted.items()) if s not in KILLED]
    return {**row, "functions": covered, "functions_missed": missed, "killed": killed, "mutants": total,
            "logic_killed": logic_killed, "logic_mutants": logic_total,
            "equivalent": [f"{n}: {EQUIVALENT[equivalent_key(module, n)]}" for n in equivalent],
            "verdict": MEETS if meets else "MISSES", "survivors": survivors}


def record(module: str, scores: Path = SCORES) -> dict[str, object]:
    """The module's row from its scratch copy, written over its entry in the scores file."""
    facts, found = run_facts(module), outcomes(module)
    if facts and not facts.get("blob"):  # measured before blobs were kept: the commit names it
        facts["blob"] = blob(module, str(facts["commit"]))
    wording = string_only(module)
    strings = {n for n in found if n.rpartition(".")[2] in wording}
    top = facts.get("module_level")
    if found and isinstance(top, dict):
        found |= {str(n): str(s) for n, s in top.items()}
    copy = SCRATCH / slug(module) / module
    source = (copy if copy.exists() else ROOT / module).read_text()
    row = entry(module, facts, found, strings, has_functions(copy if copy.exists() else ROOT / module), source)
    write_entry(scores, module, row)
    return row


def write_entry(scores: Path, module: str, row: dict[str, object]) -> None:
    """Replace the module's entry; the file is locked while it is rewritten, as two runs may finish at once."""
    with scores.open("a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        text = f.read()
        table = json.loads(text) if text.strip() else {}
        table[module] = row
        f.seek(0)
        f.truncate()
        f.write(json.dumps(table, indent=1, sort_keys=True) + "\n")


def read_scores(scores: Path = SCORES) -> dict[str, dict[str, object]]:
    return json.loads(scores.read_text()) if scores.exists() else {}


def stale(module: str, row: dict[str, object]) -> str:
    """Why the row no longer measures what is at HEAD ("" when it does): the module changed, or what its tests are
    made of (`test_files`: a test, a fixture or a fake weakened since kills less; a test left out of the row), or
    the row never recorded its tests."""
    if not row.get("blob") or row["blob"] != git("rev-parse", f"HEAD:{module}"):
        return "the module changed since"
    tests = row.get("tests")
    if not isinstance(tests, dict) or not tests:
        return "its tests were not recorded"
    now = test_files(module)
    # A file measured then that the row's tests no longer use (a test left out of the row) changed as surely as
    # one edited: the score measured with it says nothing of the tests without it.
    changed = [t for t in sorted(set(tests) | set(now))
               if t not in now or tests.get(t) != ((git("rev-parse", f"HEAD:{t}") or "") if (ROOT / t).exists()
                                                   else "")]
    shown = ", ".join(changed[:4]) + (f" and {len(changed) - 4} more" if len(changed) > 4 else "")
    return f"its tests changed since: {shown}" if changed else ""


def _listed(row: dict[str, object], key: str) -> list[str]:
    value = row.get(key)
    return [str(v) for v in value] if isinstance(value, list) else []


def report(show_survivors: bool = False, modules: list[str] | None = None, scores: Path = SCORES) -> int:
    """The table, from the scores file: for each module, the commit measured, killed of all, the score (its
    verdict) and the logic-only score beside it; 1 when any module was not run, its mutmut failed, its score is
    under its target, its mutants miss one of its functions, or its row is stale."""
    table, rows, missed = read_scores(scores), [], False
    for module in modules or list(MODULES):
        row = table.get(module)
        if row is None:
            missed = True
            rows.append((module, "-", "-", "-", "-", "NOT RUN"))
            continue
        verdict = str(row["verdict"])
        if "mutants" in row and verdict in (MEETS, "MISSES"):  # judged again by today's rule, not the run's
            total = int(str(row["mutants"]))
            share = int(str(row["killed"])) / total if total else 1.0
            verdict = MEETS if share >= TARGETS.get(module, TARGET) and not row.get("functions_missed") else "MISSES"
        why = stale(module, row)
        if why:
            verdict += f", STALE ({why})"
        missed_functions = row.get("functions_missed") or []
        if missed_functions and isinstance(missed_functions, list):
            covered = row.get("functions")
            verdict += (f", covers {len(covered) if isinstance(covered, list) else 0} functions, not "
                        f"{', '.join(map(str, missed_functions))}")
        missed = missed or verdict not in (MEETS, NOTHING)
        target = TARGETS.get(module, TARGET)
        if "mutants" not in row:
            rows.append((module, str(row["commit"]), "-", "-", "-", verdict))
            continue
        killed, total = int(str(row["killed"])), int(str(row["mutants"]))
        logic_killed, logic_total = int(str(row["logic_killed"])), int(str(row["logic_mutants"]))
        logic_share = logic_killed / logic_total if logic_total else 1.0
        rows.append((module, str(row["commit"]), f"{killed}/{total}", f"{killed / total:.0%}",
                     f"{logic_share:.0%} ({logic_killed}/{logic_total})"
                     + ("" if target == TARGET else f" of {target:.0%}"), verdict))
        if show_survivors:
            for line in _listed(row, "survivors"):
                print(f"{module}: {line}")
            for line in _listed(row, "equivalent"):
                print(f"{module}: {line} (equivalent, not counted)")
    width = max(len(r[0]) for r in rows)
    print(f"{'module'.ljust(width)}  {'commit':<20}  killed     score  logic-only                verdict (score >= "
          f"{TARGET:.0%})")
    for module, measured, ratio, whole, logic_only, verdict in rows:
        print(f"{module.ljust(width)}  {measured:<20}  {ratio:<9}  {whole:>5}  {logic_only:<24}  {verdict}")
    return 1 if missed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.mutation", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("modules", nargs="*", help="rule modules to mutate (default: all)")
    parser.add_argument("--children", type=int, default=1, help="parallel mutant runs (the machine is shared)")
    parser.add_argument("--warm-runner", action="store_true", help=argparse.SUPPRESS)  # run_module_level's
    parser.add_argument("--report", action="store_true", help="only print the table of the last runs")
    parser.add_argument("--survivors", action="store_true", help="list the mutants no test killed")
    parser.add_argument("--scores", type=Path, default=SCORES, help="the scores file to write and read "
                        "(default tests/mutation_scores.json)")
    args = parser.parse_args(argv)
    if args.warm_runner:
        print(json.dumps(warm_runner(json.load(sys.stdin))))
        return 0
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        parser.error(f"not a rule module: {', '.join(unknown)} (one of: {', '.join(MODULES)})")
    unserved = [m for m in args.modules or list(MODULES) if m in ON_POSTGRES]
    if not args.report and unserved and not os.environ.get("TEST_DATABASE_URL"):
        parser.error(f"{', '.join(unserved)}: set TEST_DATABASE_URL (a PostgreSQL server): their PostgreSQL tests "
                     "would be skipped, and a skipped test kills no mutant")
    if not args.report:
        for module in args.modules or list(MODULES):
            run(module, args.children, args.scores)
    return report(args.survivors, args.modules or None, args.scores)


if __name__ == "__main__":
    sys.exit(main())
