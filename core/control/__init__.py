"""Control: who asks what, and when — commands, the service that routes each to its family of handlers (starting,
steering, voting, rostering, people, configuring, on the desk they share), permissions, the guard's limits, replies,
checks and recall, and the schedules with their timer (the only importer of APScheduler).

The top of the core: it may use every other wing; nothing in the core imports it but itself.
"""
