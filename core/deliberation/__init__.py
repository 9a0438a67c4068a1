"""Deliberation: what is said — the engine that picks a discussion's next step, the four flows, who sits at the
table, the prompts and the bounded context they read, stances, verdicts and tallies, and the offline model.

Pure: it reads persisted state and returns plans and texts; it may use `core.models`, `core.ports` and
`core.when`, never storage, the model's SDK or anything that runs.
"""
