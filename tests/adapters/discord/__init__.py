"""Discord adapter tests: the real discord.py client against the loopback fake of Discord."""
