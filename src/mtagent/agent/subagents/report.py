"""The structured report a child returns, and how a free-text answer is handled.

Spec 003 (Boundary): the child returns a result, not its reasoning — conclusion, evidence,
suggested next step, confidence. The child is asked to end with one JSON object of
:class:`SubagentReport`; :func:`parse_report` validates it. A child that answers free text (or
JSON that does not fit) gets exactly one repair request (:func:`repair_request`); if that fails
too, its text is kept as a report marked ``validated: false`` (:func:`unvalidated_report`) — the
parent still sees what it said, and knows not to trust its shape.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from langchain_core.messages import ToolMessage
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mtagent.context.tokens import count_text_tokens
from mtagent.session import schema

ReportOutcome = Literal["success", "partial", "failed", "blocked", "interrupted"]
_FENCE = re.compile(r"```(?:json)?\s*(\{.*\})\s*```", re.DOTALL)
UNVALIDATED_SUMMARY_CHARS = 4_000


class Finding(BaseModel):
    model_config = ConfigDict(extra="forbid")

    claim: str = Field(min_length=1, max_length=2_000)
    evidence: list[str] = Field(default_factory=list, max_length=20)
    confidence: float | None = Field(None, ge=0, le=1)


class EvidenceRef(BaseModel):
    """Where a claim can be checked: a message of the child's transcript, an artifact, or a file."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["message", "artifact", "file"]
    ref: str = Field(min_length=1, max_length=500)
    note: str = Field("", max_length=300)


class SubagentReport(BaseModel):
    """What a child hands back. ``validated`` and ``evidence`` are set by the runner, not the model."""

    model_config = ConfigDict(extra="forbid")

    outcome: ReportOutcome
    summary: str = Field(min_length=1, max_length=8_000)
    findings: list[Finding] = Field(default_factory=list, max_length=50)
    files_read: list[str] = Field(default_factory=list, max_length=200)
    files_changed: list[str] = Field(default_factory=list, max_length=200)
    open_questions: list[str] = Field(default_factory=list, max_length=20)
    next_step: str | None = Field(None, max_length=1_000)
    evidence: list[EvidenceRef] = Field(default_factory=list)
    validated: bool = True


MODEL_FIELDS = ("outcome", "summary", "findings", "files_read", "files_changed", "open_questions", "next_step")

REPORT_INSTRUCTIONS = """When you are done, answer with ONE JSON object and nothing else:
{"outcome": "success" | "partial" | "failed" | "blocked",
 "summary": "two or three sentences: the answer to the brief",
 "findings": [{"claim": "one fact", "evidence": ["path:line", "..."], "confidence": 0.0-1.0}],
 "files_read": ["path", "..."], "files_changed": ["path", "..."],
 "open_questions": ["..."], "next_step": "what the caller should do next"}
Keep it short: facts with evidence, not your reasoning."""


def _json_candidate(text: str) -> str | None:
    fenced = _FENCE.search(text)
    if fenced:
        return fenced.group(1)
    start, end = text.find("{"), text.rfind("}")
    return text[start:end + 1] if 0 <= start < end else None


def parse_report(text: str) -> tuple[SubagentReport | None, str | None]:
    """(report, problem): the JSON object in ``text`` validated against the schema.

    Only the model's fields are read; ``validated`` and ``evidence`` in the reply are ignored
    (the runner fills them from what it saw, not from what the child claims).
    """
    candidate = _json_candidate(text or "")
    if candidate is None:
        return None, "the answer holds no JSON object"
    try:
        data = json.loads(candidate)
    except ValueError as exc:
        return None, f"the JSON does not parse: {exc}"
    if not isinstance(data, dict):
        return None, "the JSON is not an object"
    unknown = sorted(set(data) - set(MODEL_FIELDS) - {"evidence", "validated"})
    if unknown:
        return None, f"unknown field(s): {', '.join(unknown)}"
    try:
        return SubagentReport.model_validate({k: v for k, v in data.items() if k in MODEL_FIELDS}), None
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "report"
        return None, f"{where}: {err['msg']}"


def repair_request(problem: str) -> str:
    """The one message a child gets when its answer is not a valid report."""
    return (f"Your answer is not a valid report ({problem}). Reply again with only the JSON object, "
            f"exactly in this shape, and nothing else.\n\n{REPORT_INSTRUCTIONS}")


def unvalidated_report(text: str, outcome: ReportOutcome = "partial") -> SubagentReport:
    """A free-text answer kept as a report, marked so the parent knows its shape is not checked."""
    body = (text or "").strip() or "(the subagent gave no answer)"
    if len(body) > UNVALIDATED_SUMMARY_CHARS:
        body = body[:UNVALIDATED_SUMMARY_CHARS] + " […]"
    return SubagentReport(outcome=outcome, summary=body, validated=False)


def render_report(report: SubagentReport, *, child_id: str, agent: str, transcript: str,
                  max_tokens: int) -> str:
    """The report as the parent's tool result: JSON, bounded to ``max_tokens``.

    Over budget, evidence references go first, then files, then the last findings; a note says
    that the full report and the child's transcript hold the rest.
    """
    data: dict[str, Any] = {"subagent": child_id, "agent": agent, "transcript": transcript,
                            **{k: v for k, v in report.model_dump(exclude_none=True).items() if v != []}}
    text = _dumps(data)
    trims = (("evidence", None), ("files_read", None), ("findings", 3), ("findings", 0), ("open_questions", 0))
    for key, keep in trims:
        if count_text_tokens(text) <= max_tokens:
            break
        items = data.get(key) or []
        kept = items[:keep] if keep is not None else []
        if len(kept) < len(items):
            data[key] = kept
            data["trimmed"] = (f"{data.get('trimmed', '')} {key}: {len(items) - len(kept)} dropped;").strip()
            text = _dumps(data)
    if count_text_tokens(text) > max_tokens:
        data["summary"] = str(data.get("summary", ""))[: max(200, max_tokens * 2)] + " […]"
        text = _dumps(data)
    return text


def interrupted_result(child_id: str, agent: str, path: str) -> str:
    """The ``task`` result of a child that did not finish (Ctrl-C, a crash, the user moving on)."""
    return (f"Interrupted: subagent {child_id} ({agent}) did not finish; its partial transcript is {path}. "
            "Start a new task to redo the work.")


def settle_after_crash(synthetic: Sequence[ToolMessage], records: Iterable[dict[str, Any]], *, sink: Any,
                       max_tokens: int) -> None:
    """Answer the ``task`` calls a resumed session found without a result: a finished child's recorded
    report — reused, never recomputed — else interrupted, naming its transcript; recorded in ``sink``."""
    wanted = {m.tool_call_id for m in synthetic}
    last: dict[str, dict[str, Any]] = {}
    for record in records:
        if record.get("type") == schema.SUBAGENT and record.get("tool_call_id") in wanted:
            last[str(record["tool_call_id"])] = record
    for message in synthetic:
        record = last.get(message.tool_call_id)
        if record is None:
            continue
        child_id, agent, path = str(record["child_id"]), str(record.get("agent")), str(record.get("path"))
        if record.get("status") == "finished" and isinstance(record.get("report"), dict):
            report = SubagentReport.model_validate(record["report"])
            message.content = render_report(report, child_id=child_id, agent=agent, transcript=path,
                                            max_tokens=max_tokens)
            message.status = "success"
            status = "reused"
        else:
            message.content = interrupted_result(child_id, agent, path)
            status = "interrupted"
        sink.append(schema.subagent_record(child_id, status, tool_call_id=message.tool_call_id, agent=agent, path=path))


def _dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(", ", ": "))
