"""Deterministic JSON instances for a JSON schema, as the fake Anthropic API's structured output."""

from __future__ import annotations

import re
from typing import Any

# The SDK moves constraints the API does not enforce into the description as "{minItems: 2, ...}";
# honour them anyway so constrained pydantic models still validate.
_BOUNDS = ("minItems", "maxItems", "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum")
_EXTRA = re.compile(rf"\b({'|'.join(_BOUNDS)})\s*:\s*(-?\d+(?:\.\d+)?)")

_FORMATS = {
    "date-time": "2026-01-01T09:00:00Z",
    "date": "2026-01-01",
    "time": "09:00:00",
    "duration": "P1D",
    "email": "someone@example.com",
    "hostname": "example.com",
    "uri": "https://example.com/",
    "ipv4": "127.0.0.1",
    "ipv6": "::1",
    "uuid": "00000000-0000-4000-8000-000000000001",
}


def instance(schema: dict[str, Any], *, items: int = 2) -> Any:
    """A value that validates against `schema`; arrays get `items` elements unless bounds say otherwise."""
    return _Generator(schema, items).value(schema, "value")


class _Generator:
    def __init__(self, root: dict[str, Any], items: int) -> None:
        self.root = root
        self.items = items
        self.count = 0

    def value(self, schema: dict[str, Any], hint: str) -> Any:
        schema = self._resolve(schema)
        if "const" in schema:
            return schema["const"]
        if schema.get("enum"):
            return schema["enum"][0]
        for key in ("anyOf", "oneOf"):
            if schema.get(key):
                variants = [self._resolve(v) for v in schema[key]]
                usable = [v for v in variants if v.get("type") != "null"] or variants
                return self.value(usable[0], hint)
        if schema.get("allOf"):
            merged: dict[str, Any] = {}
            for part in schema["allOf"]:
                merged.update(self._resolve(part))
            return self.value(merged, hint)
        kind = schema.get("type", "object" if "properties" in schema else "string")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        bounds = self._bounds(schema)
        if kind == "object":
            properties = schema.get("properties", {})
            return {name: self.value(sub, name) for name, sub in properties.items()}
        if kind == "array":
            low = int(bounds.get("minItems", 1))
            count = max(low, min(self.items, int(bounds.get("maxItems", self.items))))
            item_schema = schema.get("items", {"type": "string"})
            return [self.value(item_schema, hint) for _ in range(count)]
        if kind == "integer":
            return int(self._number(bounds))
        if kind == "number":
            return float(self._number(bounds))
        if kind == "boolean":
            return True
        if kind == "null":
            return None
        return self._string(schema, bounds, hint)

    def _resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in schema:
            node: Any = self.root
            for part in schema["$ref"].removeprefix("#/").split("/"):
                if part:
                    node = node[part.replace("~1", "/").replace("~0", "~")]
            schema = node
        return schema

    @staticmethod
    def _bounds(schema: dict[str, Any]) -> dict[str, float]:
        found = {key: float(value) for key, value in _EXTRA.findall(schema.get("description", ""))}
        found.update({k: float(v) for k, v in schema.items() if k in _BOUNDS and _is_num(v)})
        return found

    @staticmethod
    def _number(bounds: dict[str, float]) -> float:
        low = bounds.get("minimum", bounds.get("exclusiveMinimum", 0) + 1)
        high = bounds.get("maximum", max(low, 1))
        return min(max(low, 1), high)

    def _string(self, schema: dict[str, Any], bounds: dict[str, float], hint: str) -> str:
        if schema.get("format") in _FORMATS:
            return _FORMATS[schema["format"]]
        self.count += 1
        text = f"{hint.replace('_', ' ')} {self.count}"
        low = int(bounds.get("minLength", 0))
        text = text.ljust(low, ".")
        if "maxLength" in bounds:
            text = text[: int(bounds["maxLength"])]
        return text


def _is_num(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
