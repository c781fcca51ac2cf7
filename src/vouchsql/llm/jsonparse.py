"""A tolerant reader for the JSON object a prompt asks for.

Models wrap JSON in code fences, put a sentence before it or after it, and leave trailing
commas. This reads the first JSON object in a reply through all of that, and says precisely
why it could not (empty, cut off, not an object) so the one repair request can say so too.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .base import BadOutput

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|javascript)?[ \t]*\n?(.*?)(?:```|\Z)", re.S)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def parse_json_object(text: str | None) -> dict[str, Any]:
    if text is None or not text.strip():
        raise BadOutput("the reply was empty")
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    last_error = "no JSON object in the reply"
    for cand in candidates:
        start = cand.find("{")
        if start < 0:
            continue
        for attempt in (cand, _TRAILING_COMMA.sub(r"\1", cand)):
            try:
                obj, _ = json.JSONDecoder().raw_decode(attempt, start)
            except json.JSONDecodeError as exc:
                last_error = ("the JSON object is cut off before its end" if _unclosed(attempt, start)
                              else f"the JSON is malformed ({exc.msg} at character {exc.pos - start})")
                continue
            if isinstance(obj, dict):
                return obj
            last_error = "the reply holds JSON, but not an object"
    raise BadOutput(last_error)


def _unclosed(text: str, start: int) -> bool:
    """Whether the object opened at ``start`` is still open (or inside a string) at the end."""
    depth, in_string, escaped = 0, False, False
    for ch in text[start:]:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return False
    return True


def require(data: dict[str, Any], key: str, types: type | tuple[type, ...], *, nullable: bool = False) -> Any:
    """``data[key]`` if it has one of ``types`` (or is null where allowed), else BadOutput."""
    if key not in data:
        raise BadOutput(f"the object has no {key!r} field")
    value = data[key]
    if value is None and nullable:
        return None
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in _as_tuple(types)):
        names = "/".join(t.__name__ for t in _as_tuple(types))
        raise BadOutput(f"field {key!r} must be {names}{' or null' if nullable else ''}, got {type(value).__name__}")
    return value


def _as_tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)
