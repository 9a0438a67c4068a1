"""Discord: the discord.py client, its ChatPort, and pure translation and rendering of payloads."""
