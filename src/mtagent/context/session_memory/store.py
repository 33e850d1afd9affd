"""The session-memory notes file: ``…/artifacts/<session-id>/session-memory/summary.md``.

File I/O only — reading the notes (a hand edit counts), writing them atomically, and deciding
which notes a resume shows — so the manager's trigger and threading logic never touch the disk.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mtagent.context.session_memory import notes as N
from mtagent.context.session_memory.notes import Notes
from mtagent.session.artifacts import SESSION_MEMORY_DIR
from mtagent.session.schema import COMPACT_BOUNDARY, SESSION_MEMORY_UPDATE

__all__ = [
    "SESSION_MEMORY_RELATIVE_PATH",
    "load_session_memory",
    "read_notes",
    "session_memory_for_resume",
    "write_notes",
]

SESSION_MEMORY_RELATIVE_PATH = f"{SESSION_MEMORY_DIR}/summary.md"


def read_notes(path: Path) -> Notes:
    """The notes as on disk now, or the empty template."""
    try:
        return N.parse_notes(path.read_text(encoding="utf-8", errors="replace"))
    except FileNotFoundError:
        return Notes.empty()


def write_notes(path: Path, text: str) -> None:
    """Replace the notes atomically (a crash leaves the old notes or the new ones, never half)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def load_session_memory(path: Path) -> str | None:
    """The notes for resume (``None`` when missing or still the empty template)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None
    return None if N.parse_notes(text).is_empty() else text


def session_memory_for_resume(path: Path, records: Sequence[dict[str, Any]]) -> str | None:
    """The notes to show on resume beside the last summary (``build_resume_view(session_memory=…)``).

    ``None`` when there are no notes, or when the last compaction was a session-memory one and
    the notes have not changed since — the summary message already *is* the notes, and sending
    them twice would cost up to ``total_max_tokens`` for nothing.
    """
    notes = load_session_memory(path)
    if notes is None:
        return None
    for rec in reversed(records):
        kind = rec.get("type")
        if kind == SESSION_MEMORY_UPDATE:
            return notes
        if kind == COMPACT_BOUNDARY:
            return None if rec.get("summary_source") == "session_memory" else notes
    return notes
