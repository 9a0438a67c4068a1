"""The rows: each rule module measured, the tests that pin it, and those whose tests need PostgreSQL."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

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
                                 "tests/core/control/test_limits_race.py", "tests/core/control/test_spending.py",
                                 "tests/core/control/test_poll_reminders.py",
                                 "tests/core/control/test_poll_deadlines.py",
                                 "tests/core/control/test_digest_holds.py"],
    "core/storage/channel_rows.py": ["tests/core/storage/test_channel_rows.py",
                                     "tests/core/showing/test_digest_activity.py",
                                     "tests/core/test_rules_that_broke.py"],
    # the driver, split into its parts: each row covers every function of its module
    "core/running/lease.py": ["tests/core/running/test_lease_rules.py", "tests/core/running/test_lease.py"],
    "core/running/outbox.py": ["tests/core/running/test_outbox_rules.py", "tests/core/running/test_outbox.py"],
    "core/running/driver.py": ["tests/core/running/test_driver_rules.py"],
    "core/running/steps.py": ["tests/core/running/test_step_rules.py", "tests/core/running/test_steps.py",
                              "tests/core/running/test_step_edges.py"],
    # a turn's rules are reached through the steps that take them: peer review, budget stops, a thinking model's
    # failed answers, live text
    "core/running/turns.py": ["tests/core/running/test_turn_rules.py", "tests/core/running/test_turns.py",
                              "tests/core/running/test_peer_review_runs.py",
                              "tests/core/deliberation/test_review_on_the_api.py",
                              "tests/core/control/test_spending.py", "tests/core/control/test_spending_worst_case.py",
                              "tests/core/test_thinking_model.py", "tests/core/running/test_steps.py",
                              "tests/core/running/test_step_edges.py", "tests/core/test_rules_that_broke.py",
                              "tests/core/running/test_turn_mutants.py",
                              "tests/core/running/test_turn_budget_stops.py"],
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
    "core/running/seat_turns.py": ["tests/core/running/test_seats.py", "tests/core/running/test_seat_turn_rules.py",
                                   "tests/core/running/test_seat_ranking_rules.py"],
    "core/storage/seat_waits.py": ["tests/core/storage/test_seat_wait_rules.py",
                                   "tests/core/storage/test_decisions.py"],
    # decision visibility
    "core/control/recall.py": ["tests/core/control/test_memory.py", "tests/adapters/slack/test_decisions.py",
                               "tests/core/control/test_recall_rules.py", "tests/core/control/test_recall_search.py",
                               "tests/core/control/test_recall_links.py"],
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
