"""Running: durable execution — the driver that runs a discussion's steps under a lease with fenced writes, what a
finished turn changes, the outbox it publishes exactly once, live text, and how much a step may spend.

It may use showing, deliberation, storage and the ports; it never decides who may ask for what.
"""
