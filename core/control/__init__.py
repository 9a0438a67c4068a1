"""Control: who asks what, and when — commands, the service that handles them, permissions, the guard's limits,
replies, and the schedules with their timer (the only importer of APScheduler).

The top of the core: it may use every other wing; nothing in the core imports it but itself.
"""
