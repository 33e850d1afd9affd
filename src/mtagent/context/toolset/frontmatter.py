"""The front matter of a SKILL.md: a deliberately small YAML subset, safe on hostile files.

A skill comes from a repository or a download; its front matter is untrusted. A full YAML parser
would accept anchors and aliases (a "billion laughs" bomb expands a few hundred bytes into
gigabytes), tags that build objects, and nesting to any depth. Skills need none of that: the open
format names ``name`` and ``description`` (plus optional ``license``, ``allowed-tools``,
``metadata``). So this reads only top-level ``key: value`` lines — a plain, single- or
double-quoted scalar, or a ``|``/``>`` block of indented lines — and skips anything indented or
nested. An alias is just text here; nothing expands. Control characters are removed from values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FENCE = "---"
MAX_FRONT_MATTER_LINES = 200
MAX_VALUE_CHARS = 4_096
_KEY = re.compile(r"^([A-Za-z][A-Za-z0-9_-]{0,63}):(?:\s+(.*)|\s*)$")
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


def _scalar(raw: str) -> str:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'":
        inner = raw[1:-1]
        return inner.replace("''", "'") if raw[0] == "'" else inner.replace('\\"', '"').replace("\\n", " ")
    return raw.split(" #", 1)[0].strip()


def parse(text: str) -> Document:
    """Split ``text`` into its front matter fields and its body (see the module docstring)."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != FENCE:
        raise FrontMatterError("it does not start with a '---' front matter block")
    try:
        end = next(i for i in range(1, min(len(lines), MAX_FRONT_MATTER_LINES + 1)) if lines[i].strip() == FENCE)
    except StopIteration:
        raise FrontMatterError(f"its front matter has no closing '---' within {MAX_FRONT_MATTER_LINES} lines") from None
    fields: dict[str, str] = {}
    i = 1
    while i < end:
        line = lines[i]
        i += 1
        match = _KEY.match(line)
        if match is None:  # indented (nested) lines, comments, list items: not ours
            continue
        key, value = match.group(1).lower(), match.group(2) or ""
        if value.strip() in ("|", ">", "|-", ">-", "|+", ">+"):
            block: list[str] = []
            while i < end and (not lines[i].strip() or lines[i][:1] in " \t"):
                block.append(lines[i].strip())
                i += 1
            value = " ".join(b for b in block if b)
        else:
            value = _scalar(value)
        if key not in fields:  # a repeated key cannot override the first
            fields[key] = clean(value)
    return Document(fields, "\n".join(lines[end + 1:]).strip("\n"))
