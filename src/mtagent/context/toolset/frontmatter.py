"""The front matter of a SKILL.md, read by the one front matter reader (``context.static.front_matter``).

A skill comes from a repository or a download; its front matter is untrusted. It is YAML like a
rule's or an agent profile's, read by the same hardened reader (no aliases, bounded size and depth,
no repeated keys). Skills use only its scalar fields: the open format names ``name`` and
``description`` (plus optional ``license``, ``allowed-tools``, ``metadata``); a list or mapping
value is not a field here. Control characters are removed from values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mtagent.context.static.front_matter import split

MAX_VALUE_CHARS = 4_096
# control, zero-width and bidi characters: never in a value, a listing line or a name shown to the model
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


class FrontMatterError(ValueError):
    """The file does not start with a front matter block this reader accepts."""


@dataclass(slots=True, frozen=True)
class Document:
    fields: dict[str, str]
    body: str


def clean(text: str, limit: int = MAX_VALUE_CHARS) -> str:
    """``text`` without control, zero-width or bidi-override characters (tabs and newlines become spaces)."""
    return " ".join(CONTROL.sub(" ", text).split())[:limit]


def _scalar(value: object) -> str | None:
    """A string, or a number as written (``name: 2024-notes`` stays text; ``version: 2`` is "2")."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def parse(text: str) -> Document:
    """The scalar fields of ``text``'s front matter and its body; ``FrontMatterError`` says why not."""
    found = split(text)
    if not found.present:
        raise FrontMatterError("it does not start with a '---' front matter block closed by a '---' line")
    if found.problem:
        raise FrontMatterError(found.problem)
    fields = {}
    for key, value in found.meta.items():
        scalar = _scalar(value)
        if isinstance(key, str) and scalar is not None:
            fields.setdefault(key.lower(), clean(scalar))
    return Document(fields, found.body.strip("\n"))
