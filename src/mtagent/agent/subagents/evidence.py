"""What a child actually did, read back from its transcript (not from what it claims).

The report's ``files_read`` / ``files_changed`` are completed from the child's tool calls, and
its ``evidence`` points at the tool results (``<child-id>#<message-id>``) and persisted
artifacts (``artifacts/<child-id>/tool-results/…``) that back it — the parent, or a later
``recall``, can open exactly what the child saw. Token usage is summed from the child's
assistant messages, so ``/context`` can count children apart from the parent's window.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtagent.agent.subagents.report import EvidenceRef, SubagentReport
from mtagent.session import schema
from mtagent.session.reader import read_records

CHANGE_TOOLS = {"write_file": "file_path", "edit_file": "file_path"}
NOTE_CHARS = 120
MAX_OPEN_QUESTIONS = 20  # SubagentReport.open_questions' bound


@dataclass(slots=True)
class ChildTrace:
    files_read: list[str] = field(default_factory=list)
    files_changed: list[str] = field(default_factory=list)
    evidence: list[EvidenceRef] = field(default_factory=list)
    denied: list[str] = field(default_factory=list)  # calls the user or a rule refused
    input_tokens: int = 0
    output_tokens: int = 0
    model_calls: int = 0

    @property
    def usage(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "model_calls": self.model_calls}


def _add(items: list[str], value: Any) -> None:
    if isinstance(value, str) and value and value not in items:
        items.append(value)


def _note(name: str, args: dict[str, Any]) -> str:
    shown = ", ".join(f"{k}={v!r}" for k, v in args.items() if not isinstance(v, (dict, list)))
    return f"{name}({shown})"[:NOTE_CHARS]


def trace_child(transcript: Path, child_id: str, *, max_refs: int) -> ChildTrace:
    """Files, evidence references and usage of one child transcript (unreadable lines skipped)."""
    trace = ChildTrace()
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    for record in read_records(transcript, skip_corrupt=True):
        if record.get("type") == schema.EVENT and record.get("event") == "tool_denied":
            data = record.get("data") or {}
            name, args = calls.get(str(data.get("tool_call_id")), (str(data.get("tool")), {}))
            _add(trace.denied, f"denied: {_note(name, args)} — {str(data.get('reason') or '')[:NOTE_CHARS]}")
        if record.get("type") != schema.TRANSCRIPT_MESSAGE:
            continue
        if record.get("role") == "assistant":
            usage = record.get("usage") or {}
            trace.model_calls += 1
            trace.input_tokens += int(usage.get("input_tokens") or 0)
            trace.output_tokens += int(usage.get("output_tokens") or 0)
            for call in record.get("tool_calls") or []:
                name, args = str(call.get("name")), dict(call.get("args") or {})
                calls[str(call.get("id"))] = (name, args)
                if name in CHANGE_TOOLS:
                    _add(trace.files_changed, args.get(CHANGE_TOOLS[name]))
        elif record.get("role") == "tool" and record.get("status") != "error":
            name, args = calls.get(str(record.get("tool_call_id")), (str(record.get("name")), {}))
            if name == "read_file":
                _add(trace.files_read, args.get("file_path"))
            if len(trace.evidence) < max_refs and record.get("id"):
                trace.evidence.append(EvidenceRef(kind="message", ref=f"{child_id}#{record['id']}",
                                                  note=_note(name, args)))
            artifact = (record.get("toolUseResult") or {}).get("artifact")
            if artifact and len(trace.evidence) < max_refs:
                trace.evidence.append(EvidenceRef(kind="artifact", ref=f"artifacts/{child_id}/{artifact}",
                                                  note=f"full output of {name}"))
    return trace


def _merged(first: Iterable[str], second: Iterable[str]) -> list[str]:
    out: list[str] = []
    for item in [*first, *second]:
        _add(out, item)
    return out


def complete_report(report: SubagentReport, trace: ChildTrace) -> SubagentReport:
    """The report with the files the child really touched, the evidence that backs it, and the
    calls it was refused (an open question for the parent: the work may be incomplete)."""
    questions = _merged(report.open_questions, trace.denied)[:MAX_OPEN_QUESTIONS]
    return report.model_copy(update={
        "files_read": _merged(trace.files_read, report.files_read),
        "files_changed": _merged(trace.files_changed, report.files_changed),
        "open_questions": questions,
        "evidence": trace.evidence,
    })
