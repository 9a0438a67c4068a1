"""The canvas methods of the fake Slack Web API (canvases.create / edit / access.set, conversations.canvases.create),
with Slack's missing_scope answer for an app installed without `canvases:write`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

OPERATIONS = {"insert_after", "insert_before", "insert_at_start", "insert_at_end", "replace", "delete"}
SCOPES = "commands,chat:write,chat:write.customize,channels:history,channels:join,files:write,canvases:write"


@dataclass
class Canvas:
    id: str
    title: str
    markdown: str
    channel_id: str = ""  # a channel canvas (conversations.canvases.create): tabbed in this channel
    edits: int = 0
    access: dict[str, str] = field(default_factory=dict)  # channel id -> read / write


class CanvasMethods:
    """Mixed into FakeSlack: its `m_<method>` handlers find these by name."""

    _n: int

    @property
    def canvases(self) -> dict[str, Canvas]:
        return self.__dict__.setdefault("_canvases", {})

    @property
    def missing_scopes(self) -> set[str]:
        """Scopes the installed app lacks: `fake.missing_scopes.add("canvases:write")`."""
        return self.__dict__.setdefault("_missing_scopes", set())

    def _scope(self, needed: str) -> dict[str, Any] | None:
        if needed not in self.missing_scopes:
            return None
        provided = ",".join(s for s in SCOPES.split(",") if s not in self.missing_scopes)
        return {"ok": False, "error": "missing_scope", "needed": needed, "provided": provided}

    @staticmethod
    def _content(p: dict[str, Any]) -> str | None:
        content = p.get("document_content")
        if content is None:
            return ""
        if not isinstance(content, dict) or content.get("type") != "markdown" or not isinstance(
                content.get("markdown"), str):
            return None
        return str(content["markdown"])

    def _new(self, title: str, markdown: str, channel_id: str = "") -> Canvas:
        self._n += 1
        canvas = Canvas(id=f"F{self._n:010d}", title=title, markdown=markdown, channel_id=channel_id)
        self.canvases[canvas.id] = canvas
        return canvas

    def m_canvases_create(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        if refused := self._scope("canvases:write"):
            return refused
        markdown = self._content(p)
        if markdown is None:
            return {"ok": False, "error": "invalid_arguments"}
        return {"ok": True, "canvas_id": self._new(str(p.get("title") or "Untitled"), markdown,
                                                    str(p.get("channel_id") or "")).id}

    def m_conversations_canvases_create(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        if refused := self._scope("canvases:write"):
            return refused
        channel = str(p.get("channel_id") or "")
        if not channel:
            return {"ok": False, "error": "invalid_arguments"}
        if any(c.channel_id == channel for c in self.canvases.values()):
            return {"ok": False, "error": "channel_canvas_already_exists"}
        markdown = self._content(p)
        if markdown is None:
            return {"ok": False, "error": "invalid_arguments"}
        return {"ok": True, "canvas_id": self._new(str(p.get("title") or "Channel canvas"), markdown, channel).id}

    def m_canvases_edit(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        if refused := self._scope("canvases:write"):
            return refused
        canvas = self.canvases.get(str(p.get("canvas_id") or ""))
        if canvas is None:
            return {"ok": False, "error": "canvas_not_found"}
        changes = p.get("changes")
        if not isinstance(changes, list) or not changes:
            return {"ok": False, "error": "invalid_arguments"}
        for change in changes:
            op = change.get("operation")
            markdown = self._content(change)
            if op not in OPERATIONS or markdown is None or (op != "delete" and not markdown):
                return {"ok": False, "error": "canvas_editing_failed"}
            if op == "replace" and not change.get("section_id"):  # without a section: the whole canvas
                canvas.markdown = markdown
            elif op == "insert_at_end":
                canvas.markdown += "\n" + markdown
            elif op == "insert_at_start":
                canvas.markdown = markdown + "\n" + canvas.markdown
            else:  # sections are not modelled: Council only ever replaces the whole canvas
                return {"ok": False, "error": "canvas_editing_failed"}
        canvas.edits += 1
        return {"ok": True}

    def m_canvases_access_set(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        if refused := self._scope("canvases:write"):
            return refused
        canvas = self.canvases.get(str(p.get("canvas_id") or ""))
        if canvas is None:
            return {"ok": False, "error": "canvas_not_found"}
        # Lists travel as JSON arrays or, form-encoded, as comma-separated ids (what slack_sdk sends).
        channels, users = ([x for x in v.split(",") if x] if isinstance(v, str) else v
                           for v in (p.get("channel_ids"), p.get("user_ids")))
        if bool(channels) == bool(users) or p.get("access_level") not in ("read", "write", "owner"):
            return {"ok": False, "error": "invalid_arguments"}
        for channel in channels or []:
            canvas.access[str(channel)] = str(p["access_level"])
        return {"ok": True}
