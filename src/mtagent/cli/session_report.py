"""What the engine did in one session, read back from its transcript (the truth).

``/context stats``, ``/context artifacts`` and ``mtagent demo`` show the same facts: which tool
results were persisted (and how much of them the model never had to read), every compaction
with its before/after tokens, every microcompact, and the last ``context_plan``. They are read
from the transcript records rather than from a live object, so a resumed session, a finished
demo and a running REPL report identically.

Only record types this module uses are parsed in full; other lines are skipped on a byte
pattern first, so reading a long transcript costs little more than one pass over its bytes.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtagent.session import schema

_WANTED = re.compile(
    rb'"type"\s*:\s*"(?:tool_result_artifact|compact_boundary|microcompact|context_plan'
    rb'|session_start|compression)"'
)
_TOOL_MESSAGE = re.compile(rb'"role"\s*:\s*"tool"')
_USAGE = re.compile(rb'"input_token_details"')


@dataclass(slots=True, frozen=True)
class PersistedResult:
    """One tool result written to an artifact file; the model saw a preview of it."""

    tool_call_id: str
    tool: str | None
    path: str
    original_chars: int
    stored_bytes: int
    truncated: bool
    preview_chars: int | None = None

    @property
    def chars_kept_out(self) -> int:
        """Characters of this result the model did not have to carry in its window."""
        if self.preview_chars is None:
            return 0
        return max(0, self.original_chars - self.preview_chars)


@dataclass(slots=True, frozen=True)
class CompactionEntry:
    """One ``compact_boundary`` (or a v1 ``compression``) in the transcript."""

    trigger: str
    pre_tokens: int
    post_tokens: int
    summary_source: str | None

    @property
    def saved_tokens(self) -> int:
        return max(0, self.pre_tokens - self.post_tokens)


@dataclass(slots=True)
class SessionReport:
    """Everything the CLI shows about a session's context history."""

    transcript: Path
    session_id: str
    model: str | None = None
    persisted: list[PersistedResult] = field(default_factory=list)
    compactions: list[CompactionEntry] = field(default_factory=list)
    microcompacts: list[int] = field(default_factory=list)  # how many tool results each cleared
    last_plan: dict[str, Any] | None = None
    skipped_lines: int = 0
    # Prompt-cache reads and writes the provider reported (usage_metadata.input_token_details).
    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    shell_commands: int = 0
    sandboxed_commands: int = 0

    @property
    def compaction_tokens_saved(self) -> int:
        return sum(c.saved_tokens for c in self.compactions)

    @property
    def chars_kept_out(self) -> int:
        return sum(p.chars_kept_out for p in self.persisted)

    @property
    def cleared_results(self) -> int:
        return sum(self.microcompacts)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _apply(report: SessionReport, rec: dict[str, Any], previews: dict[str, int]) -> None:
    kind = rec.get("type")
    if kind == schema.SESSION_START:
        report.session_id = str(rec.get("session_id") or report.session_id)
        report.model = rec.get("model")
    elif kind == schema.TOOL_RESULT_ARTIFACT:
        report.persisted.append(PersistedResult(
            tool_call_id=str(rec.get("tool_call_id", "")),
            tool=rec.get("tool"),
            path=str(rec.get("path", "")),
            original_chars=_int(rec.get("original_chars")),
            stored_bytes=_int(rec.get("stored_bytes")),
            truncated=bool(rec.get("truncated")),
        ))
    elif kind == schema.COMPACT_BOUNDARY:
        report.compactions.append(CompactionEntry(
            trigger=str(rec.get("trigger", "auto")),
            pre_tokens=_int(rec.get("pre_tokens")),
            post_tokens=_int(rec.get("post_tokens")),
            summary_source=rec.get("summary_source"),
        ))
    elif kind == schema.COMPRESSION:
        report.compactions.append(CompactionEntry("legacy", 0, 0, None))
    elif kind == schema.MICROCOMPACT:
        report.microcompacts.append(len(rec.get("cleared_ids") or []))
    elif kind == schema.CONTEXT_PLAN:
        report.last_plan = rec
    elif kind == schema.TRANSCRIPT_MESSAGE and isinstance(rec.get("usage"), dict):
        usage = rec["usage"]
        details = usage.get("input_token_details") if isinstance(usage.get("input_token_details"), dict) else {}
        report.input_tokens += _int(usage.get("input_tokens"))
        report.cache_read_tokens += _int(details.get("cache_read"))
        report.cache_write_tokens += _int(details.get("cache_creation"))
    if kind == schema.TRANSCRIPT_MESSAGE and rec.get("role") == "tool":
        result = rec.get("toolUseResult") or {}
        if isinstance(result, dict) and result.get("kind") == "shell":  # issue 37: did it run in the sandbox
            report.shell_commands += 1
            report.sandboxed_commands += result.get("sandboxed") is True
        if result.get("artifact") and rec.get("tool_call_id"):
            previews[str(rec["tool_call_id"])] = _int(result.get("preview_chars"))


def read_session_report(transcript: str | os.PathLike[str]) -> SessionReport:
    """Read ``transcript`` (a session's JSONL) into a :class:`SessionReport`.

    A torn or corrupt line is counted in ``skipped_lines`` and otherwise ignored: a report is
    a view, and must not refuse to show what it can read.
    """
    path = Path(transcript)
    report = SessionReport(transcript=path, session_id=path.stem)
    previews: dict[str, int] = {}
    with open(path, "rb") as fh:
        for line in fh:
            if not (_WANTED.search(line) or _TOOL_MESSAGE.search(line) or _USAGE.search(line)):
                continue
            try:
                rec = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                report.skipped_lines += 1
                continue
            if isinstance(rec, dict):
                _apply(report, rec, previews)
    report.persisted = [
        PersistedResult(p.tool_call_id, p.tool, p.path, p.original_chars, p.stored_bytes, p.truncated,
                        previews.get(p.tool_call_id))
        for p in report.persisted
    ]
    return report
