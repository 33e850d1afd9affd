"""The glyphs of the context grid and the turn display, with an ASCII fallback.

``⛁ ⛶ ⛝ ⏺ ⎿`` draw as empty boxes where only DejaVu-like fonts exist, and as ``?`` where the
terminal's encoding is not UTF-8; then free and buffer cells would differ only by colour. The
ASCII set keeps every kind distinct by shape alone: ``#`` used, ``.`` free, ``x`` buffer. It is
chosen automatically when stdout's encoding is not UTF-8, and by ``--ascii``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Glyphs:
    used: str
    free: str
    buffer: str
    tool: str
    result: str


UNICODE = Glyphs(used="⛁", free="⛶", buffer="⛝", tool="⏺", result="⎿")
ASCII = Glyphs(used="#", free=".", buffer="x", tool="*", result="->")

_forced_ascii = False


def use_ascii(flag: bool = True) -> None:
    """``--ascii``: draw with :data:`ASCII` from now on in this process."""
    global _forced_ascii
    _forced_ascii = flag


def utf8_stream(stream: object | None = None) -> bool:
    encoding = getattr(stream if stream is not None else sys.stdout, "encoding", None) or "utf-8"
    return encoding.lower().replace("_", "-").startswith("utf")


def glyphs(stream: object | None = None) -> Glyphs:
    """The set to draw with now: ASCII when forced or when the output's encoding is not UTF-8."""
    return ASCII if _forced_ascii or not utf8_stream(stream) else UNICODE
