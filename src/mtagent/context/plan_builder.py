"""Build one call's :class:`~mtagent.context.plan.ContextPlan` from the meter's view.

Kept apart from the pipeline (:mod:`mtagent.context.window`) so that deciding what the model sees
and explaining it are two jobs: the window records what it did in a :class:`CallLog`, this module
turns the log and the view into the plan. The per-item list is computed lazily — a long session's
plan costs nothing until ``/context explain`` asks for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.messages import BaseMessage

from mtagent.context.budget import Bucket, BudgetBuckets
from mtagent.context.meter import ContextMeter
from mtagent.context.recall.temperature import tail_flags
from mtagent.context.plan import (
    CompressedItem,
    ContextItem,
    ContextPlan,
    DroppedItem,
    add_static_tokens,
    bucket_of,
    context_item,
)

__all__ = ["CallLog", "PlanFrame", "plan_for_view"]


@dataclass(slots=True)
class CallLog:
    """What one ``prepare`` call compressed, dropped and noted, in order."""

    compressed: list[CompressedItem] = field(default_factory=list)
    dropped: list[DroppedItem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(slots=True, frozen=True)
class PlanFrame:
    """The numbers of one call the plan reports beside the view."""

    turn: int
    tokens: int
    anchored: bool
    token_limit: int
    threshold: int
    tools_tokens: int
    tail_tokens: int = 0  # the recent tail's size (context.compression_preserve_min_tokens): hot


def plan_for_view(meter: ContextMeter, frame: PlanFrame, log: CallLog, system: Sequence[BaseMessage],
                  system_tokens: Sequence[int]) -> ContextPlan:
    """The plan of a call whose view is ``system`` (of ``system_tokens``) + ``meter.view``."""
    buckets = BudgetBuckets(frame.token_limit, frame.threshold)
    for message, tokens in zip(system, system_tokens, strict=True):
        add_static_tokens(buckets, message, tokens)
    split = getattr(frame.tools_tokens, "buckets", None)  # a toolset's ToolTokens: built-in and MCP apart
    for name, count in (split.items() if isinstance(split, dict) else [(Bucket.TOOLS.value, frame.tools_tokens)]):
        buckets.add(Bucket(name), int(count))
    for bucket, count in meter.buckets.items():
        buckets.add(bucket, count)
    view, token_list, system_list = meter.view, meter.token_list, list(system)
    count = len(view)

    def selector() -> list[ContextItem]:
        items = [context_item(m, system_tokens[i], i) for i, m in enumerate(system_list)]
        offset = len(system_list)
        hot = tail_flags(token_list[:count], frame.tail_tokens)
        items += [context_item(view[i], token_list[i], offset + i, in_tail=hot[i]) for i in range(count)]
        return items

    head = 0
    while head < min(2, count) and bucket_of(view[head]) in (Bucket.SUMMARY, Bucket.REATTACHED):
        head += 1
    selected = [f"system:{len(system_list)}", *(str(view[i].id) for i in range(head))]
    if count > head:
        first, last = str(view[head].id), str(view[count - 1].id)
        selected.append(first if count - head == 1 else f"{first}..{last} ({count - head})")
    plan = ContextPlan(
        turn=frame.turn, tokens=frame.tokens, token_limit=frame.token_limit, threshold=frame.threshold,
        buckets=buckets, anchored=frame.anchored, message_count=count, cleared_results=meter.cleared_in_view,
        compressed=log.compressed, dropped=log.dropped, notes=log.notes, selected_ids=selected,
    )
    plan._selector = selector
    return plan
