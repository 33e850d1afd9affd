"""Tool-call arguments from a model: lenient where the intent is plain, strict where it is not.

Small local models write a file's text into a JSON string with raw newlines and tabs in it;
strict JSON refuses that ("Invalid control character") although the meaning is unambiguous,
so control characters inside strings are accepted. Anything whose meaning is *not* plain is
refused with a message the model can act on: a key given twice (which value was meant?),
text after the object, NaN/Infinity, arguments that are not an object, a cut-off object.
"""

from __future__ import annotations

import json
from typing import Any


class ToolArgsError(ValueError):
    """The arguments cannot be read as one JSON object; the message tells the model how to fix them."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ToolArgsError(f"the key {key!r} appears twice; send each argument once")
        seen[key] = value
    return seen


def _no_constants(name: str) -> Any:
    raise ToolArgsError(f"{name} is not a JSON value; send a number or a string")


def parse_tool_arguments(text: str) -> dict[str, Any]:
    """The arguments object in ``text`` (empty text means no arguments)."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text, strict=False, object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
    except ToolArgsError:
        raise
    except json.JSONDecodeError as exc:
        where = f"at character {exc.pos}" if exc.pos < len(text) else "at the end (the object is cut off)"
        raise ToolArgsError(
            f"the arguments are not valid JSON: {exc.msg} {where}; send them again as one JSON object, "
            'e.g. {"path": "a.py"}'
        ) from None
    if not isinstance(value, dict):
        raise ToolArgsError(f"the arguments must be a JSON object of named fields, not {type(value).__name__}")
    return value
