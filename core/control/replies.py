"""What the service answers: a Reply for the person who asked, or a UserError with a friendly sentence."""

from __future__ import annotations

from pydantic import BaseModel


class UserError(Exception):
    """A friendly, complete sentence for the person who asked; never a traceback."""


class Reply(BaseModel):
    text: str
    discussion_id: str = ""  # the discussion to wake, if the command gave its driver work
    duplicate: bool = False  # a retried delivery of something already handled
