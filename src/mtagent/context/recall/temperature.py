"""Temperature (spec 003 §四.3) and the over-budget order (spec 003 §九).

**Temperature** of a piece of context, from where it sits:

* ``frozen`` — pinned: the system prompt, rules and ``<session_context>`` (never compacted);
* ``long_term`` — long-term memory;
* ``hot`` — the recent tail (the last ``context.compression_preserve_min_tokens`` of the view),
  and retrieved hits (a cold item a recall hit brings back warms up to hot);
* ``warm`` — older messages still in the view, summaries, re-attached files;
* ``cold`` — compacted away or cleared to a placeholder: not in the prompt, but recallable.

**Over budget**, spec 003's order is: drop low-confidence retrieval → drop expired memory →
turn large tool results into references → compress old history → only then shrink the recent
tail. :func:`over_budget_actions` is that order as a pure function over candidates; it stops as
soon as the plan fits, so a small excess never costs the tail.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Temperature = Literal["hot", "warm", "cold", "frozen", "long_term"]
PINNED_BUCKETS = frozenset({"system", "rules", "session_context", "tools"})


def temperature_of(bucket: str, *, in_tail: bool, cleared: bool = False) -> Temperature:
    """The temperature of a view item in ``bucket`` (see the module docstring)."""
    if bucket in PINNED_BUCKETS:
        return "frozen"
    if bucket == "memory":
        return "long_term"
    if bucket == "retrieved":
        return "hot"
    if cleared:
        return "cold"
    if bucket in ("summary", "reattached"):
        return "warm"
    return "hot" if in_tail else "warm"


def tail_flags(tokens: Sequence[int], tail_tokens: int) -> list[bool]:
    """For each message of a view (oldest first), whether it lies in the recent tail: the newest
    messages whose tokens add up to ``tail_tokens`` (the newest one always does)."""
    flags = [False] * len(tokens)
    total = 0
    for i in range(len(tokens) - 1, -1, -1):
        if i < len(tokens) - 1 and total >= tail_tokens:
            break
        flags[i] = True
        total += tokens[i]
    return flags


Kind = Literal["retrieval", "memory", "tool_result", "history", "tail"]
STEP_ORDER: tuple[str, ...] = ("drop_low_confidence_retrieval", "drop_expired_memory", "tool_result_to_reference",
                               "compress_old_history", "shrink_recent_tail")


@dataclass(slots=True, frozen=True)
class BudgetCandidate:
    """Something the plan could give up, and what giving it up would leave (``after`` tokens)."""

    id: str
    kind: Kind
    tokens: int
    confidence: float = 1.0
    expired: bool = False
    after: int = 0  # tokens left after the action (a reference's or a summary's size)


@dataclass(slots=True, frozen=True)
class BudgetAction:
    id: str
    step: str
    saved: int

    def as_dict(self) -> dict[str, object]:
        return {"id": self.id, "step": self.step, "saved": self.saved}


def over_budget_actions(candidates: Sequence[BudgetCandidate], used: int, budget: int, *,
                        min_confidence: float = 0.5, large_tool_result_tokens: int = 2_000) -> list[BudgetAction]:
    """What to give up, in spec 003's order, until ``used`` fits ``budget`` (pure).

    Within a step the cheapest loss goes first: the least confident retrieval, the largest
    tool result, the oldest history and the oldest tail message (candidates come oldest first).
    """
    excess = used - budget
    actions: list[BudgetAction] = []
    if excess <= 0:
        return actions
    steps: list[tuple[str, list[BudgetCandidate]]] = [
        ("drop_low_confidence_retrieval", sorted(
            (c for c in candidates if c.kind == "retrieval" and c.confidence < min_confidence),
            key=lambda c: c.confidence)),
        ("drop_expired_memory", [c for c in candidates if c.kind == "memory" and c.expired]),
        ("tool_result_to_reference", sorted(
            (c for c in candidates if c.kind == "tool_result" and c.tokens >= large_tool_result_tokens),
            key=lambda c: -c.tokens)),
        ("compress_old_history", [c for c in candidates if c.kind == "history"]),
        ("shrink_recent_tail", [c for c in candidates if c.kind == "tail"]),
    ]
    for step, group in steps:
        for c in group:
            keep = 0 if step.startswith("drop") else min(c.after, c.tokens)
            saved = c.tokens - keep
            if saved <= 0:
                continue
            actions.append(BudgetAction(c.id, step, saved))
            excess -= saved
            if excess <= 0:
                return actions
    return actions
