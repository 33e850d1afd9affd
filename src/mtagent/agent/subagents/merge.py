"""The parent merge: a child's report becomes the parent's task state, not its history.

The report itself reaches the parent's window as the ``task`` tool's (budgeted) result. Its
facts are also written where the parent keeps its task state, so they outlive that tool
result when it is microcompacted or compacted away:

* a ``subagent`` record in the parent's transcript (status ``finished``, the full report, the
  child's usage) — structured shared state, and what a resume reuses;
* the parent's session notes (``summary.md``): the findings under *Key results*, the files under
  *Files and Functions*, each line naming the child it came from.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from mtagent.agent.subagents.report import SubagentReport
from mtagent.context.session_memory import notes as N

MAX_NOTE_FINDINGS = 8
MAX_NOTE_FILES = 8
NOTE_CHARS = 300
_notes_lock = threading.Lock()


def note_lines(report: SubagentReport, child_id: str, agent: str) -> tuple[list[str], list[str]]:
    """(key results, files) lines for the session notes."""
    tag = f"[subagent {child_id} · {agent}{'' if report.validated else ' · unvalidated'}]"
    results = [f"- {tag} {report.outcome}: {report.summary}"[:NOTE_CHARS]]
    for finding in report.findings[:MAX_NOTE_FINDINGS]:
        evidence = f" ({', '.join(finding.evidence[:3])})" if finding.evidence else ""
        results.append(f"- {tag} {finding.claim}{evidence}"[:NOTE_CHARS])
    files = [f"- {path} (read by subagent {child_id})" for path in report.files_read[:MAX_NOTE_FILES]]
    files += [f"- {path} (changed by subagent {child_id})" for path in report.files_changed[:MAX_NOTE_FILES]]
    return results, files


def merge_into_notes(notes_path: Path, report: SubagentReport, *, child_id: str, agent: str) -> None:
    """Append the report's facts to the parent's session notes (atomic replace; one writer at a time)."""
    results, files = note_lines(report, child_id, agent)
    with _notes_lock:
        try:
            current = N.parse_notes(notes_path.read_text(encoding="utf-8", errors="replace"))
        except FileNotFoundError:
            current = N.Notes.empty()
        for section, lines in ((N.KEY_RESULTS, results), (N.FILES, files)):
            if not lines:
                continue
            body = current.bodies.get(section, "").rstrip("\n")
            fresh = [line for line in lines if line not in body]
            current.bodies[section] = "\n".join([body, *fresh] if body else fresh)
        notes_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = notes_path.with_name(f".{notes_path.name}.subagent.tmp")
        tmp.write_text(current.render(), encoding="utf-8")
        tmp.replace(notes_path)


def merge_into_session_memory(memory: Any, report: SubagentReport, *, child_id: str, agent: str) -> None:
    """:func:`merge_into_notes` for a session's memory manager (None: session memory is off). A notes
    file that cannot be written is logged: the report is already in the transcript."""
    if memory is None:
        return
    try:
        merge_into_notes(memory.path, report, child_id=child_id, agent=agent)
    except OSError as exc:
        logging.getLogger(__name__).warning("could not add subagent %s's facts to the session notes: %s",
                                            child_id, exc)
