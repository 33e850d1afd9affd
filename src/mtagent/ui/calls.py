"""Model calls of a session, rebuilt from its transcript: the timeline and one call's view.

Each model call leaves a ``context_plan`` record (buckets, selected, compressed, dropped, …).
The view the model saw at that call is the transcript *up to that record* passed through the
same pure function resume uses (:func:`mtagent.context.view.build_resume_view`): the last
compaction's summary, the kept and later messages, microcompacts applied. Only the records
from the compaction *before* the last one are read (a kept tail never reaches further back in
practice; when it does, the view says its first kept message is missing and the whole file is
read instead), so opening a call late in a long session costs the last stretch, not the file.
The plan's ``selected`` ids are checked against the rebuilt view, so the page says when the
two disagree rather than showing a guess. The system prompt and tool definitions are not
stored in the transcript; the plan's buckets give their size.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from mtagent.context.plan import ContextItem, context_item
from mtagent.context.recall.temperature import tail_flags
from mtagent.context.tokens import MessageTokenCounter
from mtagent.context.view import build_resume_view
from mtagent.session import schema

# Buckets in the order a prompt is assembled (also the stacking order of the timeline).
BUCKET_ORDER = ("system", "tools", "rules", "session_context", "memory", "summary", "messages",
                "tool_results", "reattached", "retrieved")
SYSTEM_BUCKETS = ("system", "tools", "rules", "session_context", "memory")
_PERSISTED = re.compile(r'<persisted-output\b[^>]*\bpath="([^"]+)"')
_RANGE = re.compile(r"^(?P<first>.+?)\.\.(?P<last>.+) \((?P<n>\d+)\)$")
_REATTACHMENT = "reattach-"  # the id of a compaction's re-attached files (compactor.build_compaction_result)


@dataclass(slots=True, frozen=True)
class CallPoint:
    """One model call on the timeline."""

    number: int  # 1-based position among the session's model calls
    offset: int  # where the plan's line starts (or its index, for records not read from a file)
    turn: Any
    tokens: int
    token_limit: int | None
    threshold: int | None
    buckets: dict[str, int]
    timestamp: str | None
    compactions: tuple[dict[str, Any], ...] = ()  # boundaries written since the previous call
    microcompacts: tuple[dict[str, Any], ...] = ()


def as_int(value: Any) -> int:
    """A recorded count as an int (0 when it is not a number): the records are read, not trusted."""
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def call_points(records: Sequence[dict[str, Any]], offsets: Sequence[int] | None = None) -> list[CallPoint]:
    """Every ``context_plan`` in order, with the compactions and microcompacts just before it."""
    offsets = offsets if offsets is not None else range(len(records))
    points: list[CallPoint] = []
    boundaries: list[dict[str, Any]] = []
    micro: list[dict[str, Any]] = []
    for i, rec in enumerate(records):
        kind = rec.get("type")
        if kind in (schema.COMPACT_BOUNDARY, schema.COMPRESSION):
            boundaries.append(rec)
        elif kind == schema.MICROCOMPACT:
            micro.append(rec)
        elif kind == schema.CONTEXT_PLAN:
            buckets = {str(k): as_int(v) for k, v in (rec.get("buckets") or {}).items()} \
                if isinstance(rec.get("buckets"), dict) else {}
            points.append(CallPoint(
                number=len(points) + 1, offset=offsets[i], turn=rec.get("turn"), tokens=as_int(rec.get("tokens")),
                token_limit=as_int(rec.get("token_limit")) or None, threshold=as_int(rec.get("threshold")) or None,
                buckets=buckets, timestamp=rec.get("timestamp"),
                compactions=tuple(boundaries), microcompacts=tuple(micro)))
            boundaries, micro = [], []
    return points


@dataclass(slots=True)
class ViewMessage:
    """One message of a call's view, as the page renders it."""

    message: BaseMessage
    item: ContextItem
    artifact: str | None  # the persisted result's artifact path, when the view holds a preview
    cleared: bool

    @property
    def role(self) -> str:
        return {"human": "user", "ai": "assistant"}.get(self.message.type, self.message.type)

    @property
    def text(self) -> str:
        content = self.message.content
        if isinstance(content, str):
            return content
        return json.dumps(content, ensure_ascii=False, indent=1, default=str)

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return list(self.message.tool_calls) if isinstance(self.message, AIMessage) else []

    @property
    def tool_call_id(self) -> str | None:
        return self.message.tool_call_id if isinstance(self.message, ToolMessage) else None


@dataclass(slots=True)
class ViewDiff:
    entered: list[ViewMessage] = field(default_factory=list)
    left: list[ViewMessage] = field(default_factory=list)
    changed: list[ViewMessage] = field(default_factory=list)


@dataclass(slots=True)
class CallDetail:
    """One model call: its plan record, the rebuilt view, and the difference from the call before."""

    point: CallPoint
    plan: dict[str, Any]
    messages: list[ViewMessage]
    diff: ViewDiff | None
    plan_check: str | None  # None when the view matches the plan's selected ids, else what differs
    warnings: list[str]

    @property
    def system_tokens(self) -> dict[str, int]:
        return {k: v for k, v in self.point.buckets.items() if k in SYSTEM_BUCKETS and v}

    @property
    def temperature(self) -> Any:
        """The plan's own temperature labels when the engine recorded them (spec 003 v1.2)."""
        return self.plan.get("temperature")

    def temperature_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for m in self.messages:
            counts[m.item.temperature] = counts.get(m.item.temperature, 0) + 1
        return counts


def _artifact_paths(records: Sequence[dict[str, Any]]) -> dict[str, str]:
    """tool_call_id → artifact path, from ``tool_result_artifact`` records and toolUseResult."""
    found: dict[str, str] = {}
    for rec in records:
        if rec.get("type") == schema.TOOL_RESULT_ARTIFACT and rec.get("tool_call_id") and rec.get("path"):
            found[str(rec["tool_call_id"])] = str(rec["path"])
        elif rec.get("type") == schema.TRANSCRIPT_MESSAGE and rec.get("role") == "tool":
            result = rec.get("toolUseResult")
            if isinstance(result, dict) and isinstance(result.get("artifact"), str) and rec.get("tool_call_id"):
                found.setdefault(str(rec["tool_call_id"]), result["artifact"])
    return found


def build_view(records: Sequence[dict[str, Any]], counter: MessageTokenCounter | None = None,
               tail_tokens: int = 0) -> tuple[list[ViewMessage], list[str], bool]:
    """The conversation part of the view after ``records``; the flag is False when the last
    compaction's first kept message is not among them (read from further back).

    Temperature labels are the engine's (:func:`context_item`): the newest ``tail_tokens`` of the
    view are the hot recent tail.
    """
    counter = counter or MessageTokenCounter()
    view = build_resume_view(records)
    artifacts = _artifact_paths(records)
    tokens = [counter.message_tokens(m) for m in view.messages]
    hot = tail_flags(tokens, tail_tokens)
    out: list[ViewMessage] = []
    for i, message in enumerate(view.messages):
        mark = (message.response_metadata or {}).get("mtagent") or {}
        artifact = None
        if isinstance(message, ToolMessage):
            text = message.content if isinstance(message.content, str) else ""
            shown = _PERSISTED.search(text)
            artifact = shown.group(1) if shown else None
            if artifact is None and mark.get("cleared"):
                artifact = artifacts.get(message.tool_call_id)
        out.append(ViewMessage(message, context_item(message, tokens[i], i, in_tail=hot[i]), artifact,
                               bool(mark.get("cleared"))))
    return out, list(view.warnings), view.first_kept_found


def _fingerprint(m: ViewMessage) -> tuple[Any, ...]:
    return (m.text, json.dumps(m.tool_calls, sort_keys=True, default=str))


def diff_views(before: Sequence[ViewMessage], after: Sequence[ViewMessage]) -> ViewDiff:
    """What entered the view, what left it, and what stayed but changed (e.g. a cleared result)."""
    old = {m.item.id: m for m in before}
    new = {m.item.id: m for m in after}
    diff = ViewDiff()
    diff.entered = [m for m in after if m.item.id not in old]
    diff.left = [m for m in before if m.item.id not in new]
    diff.changed = [m for m in after if m.item.id in old and _fingerprint(old[m.item.id]) != _fingerprint(m)]
    return diff


def expand_selected(selected: Sequence[Any]) -> list[tuple[str, str, int]]:
    """The plan's conversation entries as ``(first id, last id, count)``. ``system:n`` is left out, and so
    is a compaction's re-attachment (``reattach-<boundary>``): the compactor reads those files from disk
    when it compacts and the transcript does not record them, so no view rebuilt from it holds them (the
    plan's ``reattached`` bucket still counts their tokens)."""
    out: list[tuple[str, str, int]] = []
    for entry in map(str, selected):
        if entry.startswith("system:") and entry[len("system:"):].isdigit():
            continue
        if entry.startswith(_REATTACHMENT):
            continue
        ranged = _RANGE.match(entry)
        out.append((ranged["first"], ranged["last"], int(ranged["n"])) if ranged else (entry, entry, 1))
    return out


def check_plan(plan: dict[str, Any], messages: Sequence[ViewMessage]) -> str | None:
    """None when the rebuilt view holds exactly the messages the plan says were selected."""
    selected = plan.get("selected")
    if not isinstance(selected, list):
        return "the plan does not list its selected messages"
    expected = sum(n for _, _, n in expand_selected(selected))
    ids = [m.item.id for m in messages]
    ranges = expand_selected(selected)
    if expected != len(ids):
        return f"the plan selected {expected} messages; the rebuilt view has {len(ids)}"
    at = 0
    for first, last, n in ranges:
        if ids[at] != first or ids[at + n - 1] != last:
            return f"the plan selected {first}..{last}; the rebuilt view has {ids[at]}..{ids[at + n - 1]}"
        at += n
    return None


RecordReader = Callable[[int, int], list[tuple[int, dict[str, Any]]]]


def read_starts(outline: Sequence[tuple[int, dict[str, Any]]], offset: int) -> list[int]:
    """Where to try reading from for the view at ``offset``, nearest first: the compaction before the
    last one, then each earlier one, then the start. A kept tail can reach back past several
    compactions when they come close together (a small window), so one step back is not always enough."""
    marks = [(o, r.get("type")) for o, r in outline if o < offset
             and r.get("type") in (schema.COMPACT_BOUNDARY, schema.COMPRESSION)]
    if any(kind == schema.COMPRESSION for _, kind in marks):
        return [0]  # a v1 compression keeps "the last n messages", which may lie anywhere before it
    return [o for o, _ in reversed(marks[:-1])] + [0]


def call_detail(outline: Sequence[tuple[int, dict[str, Any]]], number: int, read: RecordReader,
                tail_tokens: int = 0) -> CallDetail | None:
    """Call ``number`` (1-based), from the session's outline (small records with offsets) and a
    reader of the records in ``[start, stop)``; None when there is no such call. ``tail_tokens``:
    the recent tail's size (hot), when the plan does not record its own."""
    points = call_points([r for _, r in outline], [o for o, _ in outline])
    if not 1 <= number <= len(points):
        return None
    point = points[number - 1]
    before = points[number - 2] if number > 1 else None
    plan = next(r for o, r in outline if o == point.offset)
    tail = plan.get("tail_tokens") if isinstance(plan.get("tail_tokens"), int) else tail_tokens
    counter = MessageTokenCounter()
    earlier: list[ViewMessage] = []
    for start in read_starts(outline, before.offset if before else point.offset):
        entries = read(start, point.offset)
        messages, warnings, found = build_view([r for _, r in entries], counter, tail)
        if before is not None:  # the diff needs the previous call's view whole too: its kept tail may reach further back
            earlier, _, found_earlier = build_view([r for o, r in entries if o < before.offset], counter, tail)
            found = found and found_earlier
        if found:
            break
    diff = diff_views(earlier, messages) if before is not None else None
    return CallDetail(point, plan, messages, diff, check_plan(plan, messages), warnings)
