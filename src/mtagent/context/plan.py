"""ContextPlan: what one model call sees, what was compressed or dropped, and why (spec 003 §九).

Without a plan, context behaviour is an opaque concatenation; with one, "why did the model not
see X?" has an answer. :class:`ContextWindowManager` builds a plan for every ``prepare()``:

* ``selected`` — :class:`ContextItem` per view message (computed lazily: a long session's plan
  costs nothing until someone asks for it),
* ``compressed`` — what this call compressed: cleared tool results (``from → to`` tokens,
  method ``cleared``) and a compaction (method ``summarize`` or ``session_memory``),
* ``dropped`` — what left the view (summarized message ranges) with the reason,
* ``conflicts`` — authority conflicts resolved by the static-context loader, when it reports any,
* ``buckets`` — token counts per :class:`~mtagent.context.budget.Bucket`.

``explain()`` renders it for ``/context explain``; ``to_record()`` is the compact
``context_plan`` transcript record (ids and numbers, never contents; the selected messages as
an id range so a 10,000-message view does not write 10,000 ids per turn).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from mtagent.context.recall.temperature import temperature_of
from mtagent.context.static.authority import Conflict
from mtagent.context.boundary import is_summary_message
from mtagent.context.budget import Bucket, BudgetBuckets
from mtagent.session.schema import context_plan_record

SYSTEM_BUCKETS = {b.value: b for b in (Bucket.SYSTEM, Bucket.RULES, Bucket.SESSION_CONTEXT, Bucket.MEMORY,
                                        Bucket.DEFERRED_TOOLS, Bucket.SKILLS, Bucket.MCP_INSTRUCTIONS)}


def _mark(message: BaseMessage) -> dict[str, Any]:
    return (message.response_metadata or {}).get("mtagent") or {}


def bucket_of(message: BaseMessage) -> Bucket:
    """The budget bucket a view message counts toward.

    System messages name their bucket in ``response_metadata["mtagent"]["bucket"]``
    (``rules``, ``session_context``, ``memory``; default ``system``) — the static-context
    loader sets it, also on its ``<session_context>`` human message.
    """
    if isinstance(message, SystemMessage):
        return SYSTEM_BUCKETS.get(str(_mark(message).get("bucket", "system")), Bucket.SYSTEM)
    if is_summary_message(message):
        return Bucket.SUMMARY
    kind = _mark(message).get("kind")
    if kind == "reattached":
        return Bucket.REATTACHED
    if kind == "retrieved":
        return Bucket.RETRIEVED
    named = _mark(message).get("bucket", kind)
    if named in SYSTEM_BUCKETS:
        return SYSTEM_BUCKETS[named]
    if isinstance(message, ToolMessage):
        return Bucket.TOOL_RESULTS
    return Bucket.MESSAGES


def add_static_tokens(buckets: BudgetBuckets, message: BaseMessage, tokens: int) -> None:
    """Count a static-context message, split as its loader measured it.

    The system prompt carries the global rules and Agent Memories, the ``<session_context>``
    the project rules and memory; their loader records those parts' token counts in
    ``response_metadata["mtagent"]["split"]``, so ``/context`` shows rules and memory as their
    own buckets and the rest stays with the message's own bucket.
    """
    left = tokens
    for name, count in (_mark(message).get("split") or {}).items():
        part = min(max(int(count), 0), left)
        if part and name in SYSTEM_BUCKETS:
            buckets.add(SYSTEM_BUCKETS[name], part)
            left -= part
    buckets.add(bucket_of(message), left)


@dataclass(slots=True, frozen=True)
class ContextItem:
    """One candidate piece of context with its governance labels (spec 003 §九)."""

    id: str
    kind: str
    source: str
    bucket: Bucket
    tokens: int
    visibility: str = "llm_visible"
    authority: str = "task_state"
    temperature: str = "hot"
    shape: str = "raw"


def context_item(message: BaseMessage, tokens: int, index: int, *, in_tail: bool = True) -> ContextItem:
    """The governance labels of one view message; ``in_tail``: it lies in the recent tail (hot)."""
    item = _context_item(message, tokens, index)
    cleared = item.visibility == "artifact_ref"
    return replace(item, temperature=temperature_of(item.bucket.value, in_tail=in_tail, cleared=cleared))


def _context_item(message: BaseMessage, tokens: int, index: int) -> ContextItem:
    bucket = bucket_of(message)
    mid = str(message.id or f"#{index}")
    if bucket in (Bucket.SYSTEM, Bucket.RULES, Bucket.SESSION_CONTEXT, Bucket.MEMORY):
        authority = {"memory": "memory", "rules": "project"}.get(bucket.value, "system")
        return ContextItem(mid, "instruction" if bucket != Bucket.MEMORY else "memory", bucket.value, bucket,
                           tokens, authority=authority, temperature="frozen")
    if bucket in (Bucket.DEFERRED_TOOLS, Bucket.SKILLS, Bucket.MCP_INSTRUCTIONS):  # context/toolset's blocks
        authority = "system" if bucket == Bucket.DEFERRED_TOOLS else "retrieval"  # skills, servers: untrusted text
        return ContextItem(mid, "tool_listing", bucket.value, bucket, tokens, authority=authority,
                           temperature="frozen")
    if bucket == Bucket.SUMMARY:
        return ContextItem(mid, "summary", "compact_boundary", bucket, tokens, authority="summary",
                           temperature="warm", shape="summary")
    if bucket == Bucket.REATTACHED:
        return ContextItem(mid, "file", "reattached", bucket, tokens, authority="retrieval", temperature="warm")
    if isinstance(message, ToolMessage):
        cleared = bool(_mark(message).get("cleared"))
        return ContextItem(mid, "tool_result", message.name or "tool", bucket, tokens, authority="retrieval",
                           visibility="artifact_ref" if cleared else "llm_visible",
                           temperature="cold" if cleared else "hot", shape="reference" if cleared else "raw")
    kind = "user_goal" if isinstance(message, HumanMessage) else "state"
    source = "assistant" if isinstance(message, AIMessage) else "user"
    return ContextItem(mid, kind, source, bucket, tokens, authority="user" if source == "user" else "task_state")


@dataclass(slots=True, frozen=True)
class CompressedItem:
    id: str
    from_tokens: int
    to_tokens: int
    method: str

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "from_tokens": self.from_tokens, "to_tokens": self.to_tokens, "method": self.method}


@dataclass(slots=True, frozen=True)
class DroppedItem:
    id: str
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "reason": self.reason}


def id_range(ids: Sequence[str]) -> str:
    """``first..last (n)`` — how a run of message ids is named in records."""
    if not ids:
        return ""
    return ids[0] if len(ids) == 1 else f"{ids[0]}..{ids[-1]} ({len(ids)})"


@dataclass(slots=True)
class ContextPlan:
    """The plan of one model call."""

    turn: int
    tokens: int
    token_limit: int
    threshold: int
    buckets: BudgetBuckets
    anchored: bool = False
    message_count: int = 0
    cleared_results: int = 0
    compressed: list[CompressedItem] = field(default_factory=list)
    dropped: list[DroppedItem] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    selected_ids: list[str] = field(default_factory=list)
    retrieved: dict[str, Any] | None = None  # the retrieved bucket: items, why, what was dropped
    _selector: Callable[[], list[ContextItem]] | None = None
    _selected: list[ContextItem] | None = None

    @property
    def selected(self) -> list[ContextItem]:
        if self._selected is None:
            self._selected = self._selector() if self._selector is not None else []
        return self._selected

    @property
    def left_before_compact(self) -> int:
        return max(0, self.threshold - self.tokens)

    def to_dict(self) -> dict[str, Any]:
        return {
            "turn": self.turn,
            "tokens": self.tokens,
            "token_limit": self.token_limit,
            "threshold": self.threshold,
            "buckets": self.buckets.as_dict(),
            "selected": list(self.selected_ids),
            "compressed": [c.as_dict() for c in self.compressed],
            "dropped": [d.as_dict() for d in self.dropped],
            "conflicts": [c.as_dict() for c in self.conflicts],
            **({"retrieved": self.retrieved} if self.retrieved else {}),
        }

    def to_record(self) -> dict[str, Any]:
        """The ``context_plan`` transcript record."""
        return context_plan_record(self.to_dict())

    def explain(self) -> str:
        """Human-readable account of this call's context, for ``/context explain``."""
        pct = 100 * self.tokens / self.token_limit if self.token_limit else 0.0
        lines = [
            (f"Context plan, call {self.turn}: {self.tokens:,} / {self.token_limit:,} tokens ({pct:.0f}%), "
             f"auto-compact threshold {self.threshold:,} ({self.left_before_compact:,} left)"),
            "Estimate: " + ("anchored on the provider's reported usage of the last call"
                            if self.anchored else "tokenizer count of the whole request"),
            "Buckets:",
        ]
        for bucket, tokens in self.buckets.tokens.items():
            if tokens:
                lines.append(f"  {bucket.value:<16}{tokens:>10,}")
        counts: dict[str, int] = {}
        for item in self.selected:
            counts[item.kind] = counts.get(item.kind, 0) + 1
        described = ", ".join(f"{n} {kind}" for kind, n in counts.items()) or "nothing"
        lines.append(f"Selected: {described} ({self.message_count} messages; "
                     f"{self.cleared_results} tool results cleared to a placeholder)")
        heat: dict[str, int] = {}
        for item in self.selected:
            heat[item.temperature] = heat.get(item.temperature, 0) + 1
        lines.append("Temperature: " + (", ".join(f"{n} {t}" for t, n in heat.items()) or "nothing")
                     + " (compacted-away messages are cold: /recall finds them)")
        if self.retrieved:
            lines.append(f"Retrieved ({self.retrieved.get('tokens', 0):,} tokens): {self.retrieved.get('reason', '')}")
            lines += [f"  - {i['reference']} (names {i['identifier']!r}, confidence {i['confidence']:.2f})"
                      for i in self.retrieved.get("items", [])]
            lines += [f"  - dropped {d['ref']}: {d['reason']}" for d in self.retrieved.get("dropped", [])]
        lines.append("Compressed this call:" if self.compressed else "Compressed this call: nothing")
        for c in self.compressed:
            lines.append(f"  - {c.id}: {c.from_tokens:,} → {c.to_tokens:,} tokens ({c.method})")
        lines.append("Dropped this call:" if self.dropped else "Dropped this call: nothing")
        for d in self.dropped:
            lines.append(f"  - {d.id}: {d.reason}")
        if self.conflicts:
            lines.append("Conflicts:")
            for c in self.conflicts:
                lines.append(f"  - {c.key}: {c.winner} wins over {', '.join(c.losers)} ({c.reason})")
        lines.extend(f"Note: {note}" for note in self.notes)
        return "\n".join(lines)
