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
    channel_id: str = ""  # tabbed in this channel
    team: str = ""
    channel_canvas: bool = False  # the channel's own canvas (conversations.canvases.create)
    edits: int = 0
    access: dict[str, str] = field(default_factory=dict)  # channel id -> read / write


class CanvasMethods:
    """Mixed into FakeSlack: its `m_<method>` handlers find these by name."""

    _n: int

    @property
    def canvases(self) -> dict[str, Canvas]:
        return self.__dict__.setdefault("_canvases", {})

    @property
    def free_teams(self) -> set[str]:
        """Workspaces on Slack's free plan: no standalone canvases, only canvases tabbed in a channel
        (`fake.free_teams.add("T0001")`); the others are on a paid plan."""
        return self.__dict__.setdefault("_free_teams", set())

    @property
    def unshareable(self) -> set[str]:
        """Channels canvases.access.set answers ok for yet lists in failed_to_update_channel_ids."""
        return self.__dict__.setdefault("_unshareable", set())

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

    def _new(self, title: str, markdown: str, channel_id: str = "", team: str = "") -> Canvas:
        self._n += 1
        canvas = Canvas(id=f"F{self._n:010d}", title=title, markdown=markdown, channel_id=channel_id, team=team)
        self.canvases[canvas.id] = canvas
        return canvas

    @property
    def no_channel_canvases(self) -> set[str]:
        """Workspaces whose plan conversations.canvases.create answers team_tier_cannot_create_channel_canvases."""
        return self.__dict__.setdefault("_no_channel_canvases", set())

    def m_canvases_create(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        """A standalone canvas, or with `channel_id` one tabbed in that channel ("required for free teams": without
        it a free team is answered free_teams_cannot_create_non_tabbed_canvases). Slack documents no limit on the
        tabs canvases.create adds to a channel, so every call with channel_id makes one more."""
        if refused := self._scope("canvases:write"):
            return refused
        channel = str(p.get("channel_id") or "")
        if team in self.free_teams and not channel:
            return {"ok": False, "error": "free_teams_cannot_create_non_tabbed_canvases"}
        markdown = self._content(p)
        if markdown is None:
            return {"ok": False, "error": "invalid_arguments"}
        canvas = self._new(str(p.get("title") or "Untitled"), markdown, channel, team)
        if channel:  # "added to a channel tab with write permissions"
            canvas.access[channel] = "write"
        return {"ok": True, "canvas_id": canvas.id}

    def m_conversations_canvases_create(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        """The channel's own canvas: one per channel (channel_canvas_already_exists), none on a plan that cannot make
        them (team_tier_cannot_create_channel_canvases), and on a free team none beside an existing tab
        (free_team_canvas_tab_already_exists), as the method's documented errors say."""
        if refused := self._scope("canvases:write"):
            return refused
        channel = str(p.get("channel_id") or "")
        if not channel:
            return {"ok": False, "error": "invalid_arguments"}
        if team in self.no_channel_canvases:
            return {"ok": False, "error": "team_tier_cannot_create_channel_canvases"}
        if any(c.channel_id == channel and c.team == team and c.channel_canvas for c in self.canvases.values()):
            return {"ok": False, "error": "channel_canvas_already_exists"}
        if team in self.free_teams and self._tabbed(team, channel):
            return {"ok": False, "error": "free_team_canvas_tab_already_exists"}
        markdown = self._content(p)
        if markdown is None:
            return {"ok": False, "error": "invalid_arguments"}
        canvas = self._new(str(p.get("title") or "Channel canvas"), markdown, channel, team)
        canvas.channel_canvas = True
        return {"ok": True, "canvas_id": canvas.id}

    def _tabbed(self, team: str, channel: str) -> bool:
        return any(c.channel_id == channel and c.team == team for c in self.canvases.values())

    def m_canvases_edit(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        if refused := self._scope("canvases:write"):
            return refused
        canvas = self.canvases.get(str(p.get("canvas_id") or ""))
        if canvas is None or canvas.team not in ("", team):  # another workspace's canvas is not found here
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
        if canvas is None or canvas.team not in ("", team):  # another workspace's canvas is not found here
            return {"ok": False, "error": "canvas_not_found"}
        # Lists travel as JSON arrays or, form-encoded, as comma-separated ids (what slack_sdk sends).
        channels, users = ([x for x in v.split(",") if x] if isinstance(v, str) else v
                           for v in (p.get("channel_ids"), p.get("user_ids")))
        if bool(channels) == bool(users) or p.get("access_level") not in ("read", "write", "owner"):
            return {"ok": False, "error": "invalid_arguments"}
        failed = [str(c) for c in channels or [] if str(c) in self.unshareable]
        for channel in channels or []:
            if str(channel) not in failed:
                canvas.access[str(channel)] = str(p["access_level"])
        return {"ok": True, **({"failed_to_update_channel_ids": failed} if failed else {})}
