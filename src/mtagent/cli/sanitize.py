"""Make stored text safe to print on a terminal.

A transcript holds what models and tools produced, and a hostile repository can make a tool
print anything: ``ESC ] 0 ; title BEL`` retitles the terminal, CSI sequences move the cursor or
clear the screen, OSC 52 writes the clipboard. Everything a reader prints from a transcript goes
through :func:`terminal_safe`: C0 controls except newline and tab, DEL, and C1 controls
(U+0080–U+009F, the 8-bit CSI/OSC introducers) become visible ``\\xNN`` text, so an escape
sequence is shown, never executed. :func:`sanitize_deep` does the same inside a record.
"""

from __future__ import annotations

import re
from typing import Any

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """``text`` with every control character except ``\\n`` and ``\\t`` shown as ``\\xNN``."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def sanitize_deep(value: Any, depth: int = 0) -> Any:
    """Every string inside ``value`` (dict keys and values, lists) made :func:`terminal_safe`;
    nesting deeper than 200 levels is shown as a placeholder instead of recursing."""
    if isinstance(value, str):
        return terminal_safe(value)
    if depth > 200:
        return "[nested too deeply to show]"
    if isinstance(value, dict):
        return {terminal_safe(str(k)): sanitize_deep(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [sanitize_deep(v, depth + 1) for v in value]
    return value
