"""Make untrusted text safe to print on a terminal — the one sanitizer every printer uses.

A model, a tool, a transcript or a repository can hand mtagent any text, and a terminal obeys
what it prints: ``ESC ] 0 ; title BEL`` retitles the window, ``ESC [ 8 m`` hides what follows,
``ESC [ 1 G ESC [ 2 K`` rewrites the current line (an approval question can be made to lie),
OSC 52 writes the clipboard, and a bidi override (U+202E) shows text in another order than it
runs. :func:`terminal_safe` turns each such character into visible text — C0 controls except
newline and tab, DEL and C1 controls (U+0080–U+009F, the 8-bit CSI/OSC introducers) become
``\\xNN``; bidi embedding, override and isolate controls become ``\\uNNNN`` — so a sequence is
shown, never executed. ``\\r\\n`` is a line end and stays ``\\n``.

:func:`sanitize_deep` does the same inside a record; :func:`json_text` writes JSON for a script
that escapes the C1 and bidi characters ``json.dumps(ensure_ascii=False)`` leaves raw (the
document's value is unchanged: ``\\u009b`` is the same string in JSON).
"""

from __future__ import annotations

import json
import re
from typing import Any

BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
# every character a terminal may act on: C0 except \t and \n, DEL, C1, bidi controls
CONTROL_CHARS = f"[\x00-\x08\x0b-\x1f\x7f-\x9f{BIDI_CONTROLS}]"
_UNSAFE = re.compile(f"\r\n|{CONTROL_CHARS}")
# what json.dumps(ensure_ascii=False) leaves raw and a terminal may act on (C0 is already \uXXXX)
_JSON_UNSAFE = re.compile(f"[\x7f-\x9f{BIDI_CONTROLS}\u2028\u2029]")
MAX_DEPTH = 200


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\r\n":
        return "\n"
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def terminal_safe(text: str) -> str:
    """``text`` with every control character except ``\\n`` and ``\\t`` (and every bidi control)
    shown as ``\\xNN`` / ``\\uNNNN``; ``\\r\\n`` becomes ``\\n``. Idempotent."""
    if not _UNSAFE.search(text):
        return text
    return _UNSAFE.sub(_visible, text)


def sanitize_deep(value: Any, depth: int = 0) -> Any:
    """Every string inside ``value`` (dict keys and values, lists) made :func:`terminal_safe`;
    nesting deeper than :data:`MAX_DEPTH` levels is shown as a placeholder instead of recursing."""
    if isinstance(value, str):
        return terminal_safe(value)
    if depth > MAX_DEPTH:
        return "[nested too deeply to show]"
    if isinstance(value, dict):
        return {terminal_safe(str(k)): sanitize_deep(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [sanitize_deep(v, depth + 1) for v in value]
    return value


def json_safe(text: str) -> str:
    """A JSON document with every C1, DEL, bidi and line-separator character written as ``\\uNNNN``.

    Only valid inside JSON strings (where such characters can be), so the parsed value is the same."""
    if not _JSON_UNSAFE.search(text):
        return text
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def json_text(value: Any, **kwargs: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, **kwargs)`` that is safe to print on a terminal."""
    kwargs.setdefault("ensure_ascii", False)
    return json_safe(json.dumps(value, **kwargs))
