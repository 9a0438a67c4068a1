"""When: the times people write and read — cron expressions, "tomorrow 9:00", cadences and local wall-clock text.

Pure functions over datetimes and IANA zones; it imports nothing else of the core, and every wing may use it.
"""
