"""The deliberation protocols and their registry: the engine dispatches on `discussion.flow`."""

from __future__ import annotations

from core.flows.base import Flow
from core.flows.moderated import Moderated

FLOWS: dict[str, Flow] = {f.name: f for f in (Moderated(),)}
DEFAULT = "moderated"


def get(name: str) -> Flow:
    """The flow of that name; an unknown name (a row written by a newer version) runs as moderated."""
    return FLOWS.get(name) or FLOWS[DEFAULT]


def names() -> list[str]:
    return list(FLOWS)
