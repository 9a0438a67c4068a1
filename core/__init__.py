"""Council's core, platform-neutral, in wings by responsibility (top may import down, never up):
control → running → showing → deliberation | storage → when; with `models`, `ports` and `llm` at the root.
"""
