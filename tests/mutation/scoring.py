"""A run's score: killed of all, the mutants listed as equivalent left out, and the row it makes in the scores file."""

from __future__ import annotations

import ast
import fcntl
import json
from pathlib import Path

from tests.mutation.mutants import DECORATED_PREFIX, EMPTIED_PREFIX, TOP_PREFIX
from tests.mutation.rows import ROOT, slug

SCORES = ROOT / "tests" / "mutation_scores.json"
TARGET = 0.90  # of the whole score: every mutant counts, but those listed below by name as equivalent
TARGETS: dict[str, float] = {}  # a module held to another target (none is)
# Mutants no test can kill because they change nothing the code does, by name with the reason; they are left out
# of the whole score's count. A name here that a run no longer produces is ignored. A module-level or decorated
# mutant is listed after its module's dotted name (`core.when.cron.<module>.MONTHS__const_1`; see `equivalent_key`).
_TURNS = "core.running.turns.x\u01c1Turns\u01c1"  # mutmut's prefix of a Turns method
_SEATS = "core.running.seat_turns.x_"  # mutmut's prefix of a seat_turns function
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
    # outbox: a claim's lease checked twice, messages nobody reads, defaults no path reaches
    **{f"core.running.outbox.x\u01c1Outbox\u01c1{f}__mutmut_{n}": "the claim checks the lease again (the leased "
       "statement, one statement still): the fence of the same transaction has just checked and locked it"
       for f, n in (("_first_post", 25), ("_first_post", 29), ("_first_post", 31), ("_claim", 8), ("_claim", 14))},
    "core.running.outbox.x\u01c1Outbox\u01c1_first_post__mutmut_10": "an empty queue claimed or not: nothing is "
                                                                    "sent from it either way",
    "core.running.outbox.x\u01c1Drain\u01c1__init____mutmut_2": "`_first = \"\"` for None: it is read only after "
                                                              "`claim` has set it (`send` follows `claim`)",
    **{f"core.running.outbox.x\u01c1Outbox\u01c1{f}__mutmut_{n}": "`NotOurs(None)`: the exception's message is "
       "never read (its catcher logs the post's key)" for f, n in (("_send_queue", 6), ("_send", 74))},
    **{f"core.running.outbox.x\u01c1Outbox\u01c1_send_queue__mutmut_{n}": "a refusal without `retry_after` read "
       "as 0 or 1 s: the backoff it is compared with is 2 s at least" for n in (74, 80, 81)},
    **{f"core.running.outbox.x\u01c1Outbox\u01c1_send__mutmut_{n}": "the charts' seats read from the store "
       "instead of the kept state: the same personas and turns, so the same charts" for n in (13, 15)},
    # budget: a lock looked up first by a key never stored, a flag read only as a truth value, arguments the
    # statement built never reads, and the write-back task's name, which nothing reads
    "core.running.budget.x\u01c1SharedBuckets\u01c1_change__mutmut_22": "`_turns.get(None)` finds nothing, and "
                                                                        "`setdefault(key, …)` then returns the "
                                                                        "key's lock all the same",
    "core.running.budget.x\u01c1SharedBuckets\u01c1_change_locked__mutmut_17": "`waits = None` for `False`: it "
                                                                               "is read only by `if not waits`",
    "core.running.budget.x\u01c1SharedBuckets\u01c1_lease__mutmut_1": "`keep`'s default: the only call that "
                                                                      "leaves it out has `must=True`, whose "
                                                                      "statement and fresh take never read it",
    "core.running.budget.x\u01c1SharedBuckets\u01c1_leased__mutmut_48": "`must=None` for `False`: the fresh "
                                                                        "take and the statement read it only as "
                                                                        "a truth value",
    **{f"core.running.budget.x\u01c1SharedBuckets\u01c1_write_back_soon__mutmut_{n}": "the write-back task's "
       "name: nothing looks a task up by it; only asyncio's debugging output shows it" for n in (5, 7, 8, 9)},
    # decisions: SQL is the same whatever the case of its keywords and names, a subquery's alias and its columns'
    # types are only written where it is read, and `_ranked` tells `all` from anything else
    **{f"core.storage.decisions.x\u01c1DecisionRepo\u01c1_ranked__mutmut_{n}": "SQL keywords (and SQLite's names) "
       "in another case: SQL reads them alike" for n in (23, 54, 55, 57)},
    "core.storage.decisions.x\u01c1DecisionRepo\u01c1_topics_with__mutmut_24": "SQL keywords in lower case: SQL "
                                                                              "reads them alike",
    **{f"core.storage.decisions.x\u01c1DecisionRepo\u01c1{f}__mutmut_{n}": "the full-text subquery's alias "
       "renamed or left to SQLAlchemy: every reference to it is written with the same name"
       for f, n in (("_ranked", 46), ("_ranked", 59), ("_ranked", 60), ("_topics_with", 19), ("_topics_with", 26),
                    ("_topics_with", 27))},
    **{f"core.storage.decisions.x\u01c1DecisionRepo\u01c1{f}__mutmut_{n}": "a type left off a column of the "
       "full-text subquery: it is only compared and ordered in SQL, never read back through the type"
       for f, n in (("_ranked", 47), ("_ranked", 48), ("_topics_with", 20))},
    **{f"core.storage.decisions.x\u01c1DecisionRepo\u01c1decisions_related__mutmut_{n}": "`_ranked` is given "
       "`None` or another spelling for `any`: it tests only for `all`, so any other value ranks as `any`"
       for n in (49, 54, 55)},
    "core.storage.decisions.x\u01c1DecisionRepo\u01c1add_decision__mutmut_6": "ON CONFLICT DO NOTHING on any "
                                                                             "unique key: the row's id is made by "
                                                                             "the database, so only discussion_id "
                                                                             "can conflict",
    "core.storage.decisions.x\u01c1DecisionRepo\u01c1decisions_found__mutmut_4": "the default `limit`: every "
                                                                                "caller passes its own",
    # turns: the state read after a step's turns, whose rounds and id nothing after reads; a cache of transcripts
    # not shared, so each prompt builds the same blocks itself; values never read, or read only as truth values;
    # arguments the post never uses
    **{f"{_TURNS}run__mutmut_{n}": "`load_state` after the turns, given the discussion the fence read: its id "
       "is not read, its context rounds are read by no one (`should_block` reads the turns and the discussion), "
       "and read again in the same transaction the discussion is the same" for n in (26, 27, 28, 30, 31, 32)},
    **{f"{_TURNS}{f}__mutmut_{n}": "no transcript cache shared between the step's prompts: each builds the same "
       "blocks from the same state itself" for f, n in (("_prompt", 15), ("_prompt", 18), ("start", 2),
                                                      ("start", 6), ("start", 9))},
    f"{_TURNS}_turns_within_budget__mutmut_1": "`worst`'s default: its only caller passes it",
    f"{_TURNS}_turns_within_budget__mutmut_51": "`float('INF')` is infinity as `float('inf')` is",
    f"{_TURNS}run_turn__mutmut_30": "`usage`'s first value: every way through assigns it before it is read",
    f"{_TURNS}_settle_failures__mutmut_32": "`flows.get(None)` is the moderated flow, and every flow nudges once",
    **{f"{_TURNS}_settle_failures__mutmut_{n}": "the nudge and skip posts never read the discussion they are given"
       for n in (52, 72)},
    f"{_TURNS}_stop_for_budget__mutmut_63": "`blocked_post` reads its failed turns only as a truth value and, "
                                            "when there are some, the first: `None` and `[]` make the same post",
    # recall: a shortcut whose other way also finds nothing, and limits the list is cut to anyway
    **{f"core.control.recall.x\u01c1Recall\u01c1recalled__mutmut_{n}": "the `off` shortcut not taken: with no "
       "revisit and memory off, the steps after it add nothing either, so the list is empty both ways"
       for n in (3, 4)},
    **{f"core.control.recall.x\u01c1Recall\u01c1recalled__mutmut_{n}": "more related records read (no limit, or "
       "one more): the seed's duplicate is dropped and the list is cut to MAX_RECALLED all the same" for n in (38, 47)},
    "core.control.recall.x\u01c1Recall\u01c1search__mutmut_19": "`limit=` left to `decisions_found`'s default, "
                                                                  "which is SEARCH_LIMIT's ten",
    # rate_rows: comparisons at a point where both branches give the same value, and literals that are the same
    "core.storage.rate_rows.x__at__mutmut_8": "`>=` for `>`: when now equals the bucket's time both branches give it",
    "core.storage.rate_rows.x__least__mutmut_5": "`<=` for `<`: when the two are equal both branches give the same",
    "core.storage.rate_rows.x__refilled__mutmut_18": "`>=` for `>`: when now equals the bucket's time the refill is "
                                                    "0, as the else branch's 0.0",
    **{f"core.storage.rate_rows.x__p__mutmut_{n}": "the parameter left untyped: PostgreSQL infers double precision "
       "from the float column each is compared with or added to, and SQLite binds the same Python float"
       for n in (2, 4)},
    "core.storage.rate_rows.x\u01c1RateRepo\u01c1lease_bucket__mutmut_37": "`1e+300` is the literal `1e300`",
    # seat_turns: what a person's turn records and reads back, where record_turn or the reader above decides
    f"{_SEATS}record_answer__mutmut_30": "a picked ranking's words: record_turn draws a ranked vote's text from its "
                                         "ids, whatever text it is given",
    **{f"{_SEATS}record_answer__mutmut_{n}": "the text of a stance turn or a ranking given to record_turn: every turn "
       "a seat is asked is one or the other (a stance turn's words are read from its data, a ranking's drawn from its "
       "items), so the argument is never read" for n in (47, 48, 49, 50, 51, 52, 53, 54, 58)},
    f"{_SEATS}record_answer__mutmut_60": "`error` None or \"\": record_turn tests it only as a truth value",
    f"{_SEATS}record_answer__mutmut_75": "`offline` marks the posts the turn sends: a person's turn sends only its own "
                                         "post, which is dropped at once (the thread has their words)",
    f"{_SEATS}record_answer__mutmut_87": "`next` without a default: the turn was recorded a line before, so it is "
                                         "found",
    f"{_SEATS}record_answer__mutmut_111": "the recorded turn is never None (recorded a line before)",
    **{f"{_SEATS}_read_back__mutmut_{n}": "the recorded turn always has its choice (record_turn sets it for a stance "
       "and for a ranking): the first branch is never taken" for n in (1, 6)},
    **{f"{_SEATS}_read_back__mutmut_{n}": "an unreadable stance's label: it was read with the answer, and cut to 40 "
       "characters there" for n in (12, 14, 17, 18)},
    **{f"{_SEATS}claim_reply__mutmut_{n}": "the caller tells only \"turn\" apart: any other answer is an ordinary "
       "message" for n in (6, 46, 47, 48)},
    **{f"{_SEATS}_read_back__mutmut_{n}": "the first piece of a split is the same however many splits are made after "
       "it" for n in (26, 35)},
    f"{_SEATS}rank_place__mutmut_48": "an empty stance split is [\"\"], padded and cut to the same places",
    # activity: ON CONFLICT on a table with one key that can conflict, SQL's case, writes that change nothing
    **{f"core.storage.activity.x\u01c1ActivityRepo\u01c1{f}__mutmut_{n}": "ON CONFLICT DO NOTHING on any key: "
       "the autoincrement id never conflicts, so the one unique key named is the only one that can"
       for f, n in (("add_poll", 9), ("add_synthesis", 2))},
    **{f"core.storage.activity.x\u01c1ActivityRepo\u01c1cast__mutmut_{n}": "the partial index's predicate in "
       "another case: SQL keywords and unquoted names are read without case" for n in (27, 28)},
    "core.storage.activity.x\u01c1ActivityRepo\u01c1cast__mutmut_9": "ballots already superseded marked superseded "
                                                                     "again: the same rows end as they were",
    **{f"core.storage.activity.x\u01c1ActivityRepo\u01c1save_poll__mutmut_{n}": "the poll's id written over its "
       "row with the same id (the WHERE picks the row by it)" for n in (5, 6, 7)},
    "core.storage.activity.x\u01c1ActivityRepo\u01c1settle_turn__mutmut_3": "the usage row's first value is read "
                                                                           "only with a cost, and a cost sets it",
    "core.storage.rate_rows.x\u01c1RateRepo\u01c1lock_held_bucket__mutmut_3": "FOR UPDATE on SQLite too: SQLAlchemy's "
                                                                          "SQLite compiler writes no FOR UPDATE",
}


KILLED = ("killed", "timeout")


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
