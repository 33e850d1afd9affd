"""The context budget: effective limit, auto-compact threshold, and budget buckets.

``effective = token_limit - reserved_summary``; ``threshold = effective - buffer``
(spec 000 M0: 131072 → 98072, 65536 → 32536). The buckets follow spec 003's governance
model; a :class:`~mtagent.context.plan.ContextPlan` fills them per model call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

DEFAULT_RESERVED_SUMMARY_TOKENS = 20_000
DEFAULT_BUFFER_TOKENS = 13_000
DEFAULT_MIN_THRESHOLD_FRACTION = 0.45


def effective_context_limit(token_limit: int, reserved_summary_tokens: int = DEFAULT_RESERVED_SUMMARY_TOKENS) -> int:
    """The window less what a summary's output needs."""
    if token_limit <= 0:
        raise ValueError(f"token_limit must be positive, got {token_limit}")
    return max(1, token_limit - reserved_summary_tokens)


def auto_compact_threshold(
    token_limit: int,
    reserved_summary_tokens: int = DEFAULT_RESERVED_SUMMARY_TOKENS,
    buffer_tokens: int = DEFAULT_BUFFER_TOKENS,
    min_fraction: float = DEFAULT_MIN_THRESHOLD_FRACTION,
) -> int:
    """Context size at which auto compaction fires: ``limit - reserved - buffer``.

    The spec's fixed reserve and buffer (33K together) would leave a small local model's window
    (below ~34K) a threshold of zero — compacting on every call — so the threshold never drops
    below ``min_fraction`` of the window. The floor does not touch the spec's figures
    (131072 → 98072, 65536 → 32536).
    """
    formula = effective_context_limit(token_limit, reserved_summary_tokens) - buffer_tokens
    return max(1, formula, int(token_limit * min_fraction))


class Bucket(str, Enum):
    """Where a token of the view comes from (spec 003 §九), in drop order last-to-first."""

    SYSTEM = "system"
    TOOLS = "tools"
    RULES = "rules"
    SESSION_CONTEXT = "session_context"
    MEMORY = "memory"
    SUMMARY = "summary"
    MESSAGES = "messages"
    TOOL_RESULTS = "tool_results"
    REATTACHED = "reattached"
    RETRIEVED = "retrieved"  # recall hits for compacted-away identifiers (spec 003: 20%–35%)


# Spec 003: under pressure, retrieved material and old tool results go first; the task
# state, rules and system prompt go last (never, in practice).
DROP_ORDER: tuple[Bucket, ...] = (
    Bucket.RETRIEVED,
    Bucket.REATTACHED,
    Bucket.TOOL_RESULTS,
    Bucket.MEMORY,
    Bucket.MESSAGES,
    Bucket.SUMMARY,
    Bucket.SESSION_CONTEXT,
    Bucket.RULES,
    Bucket.TOOLS,
    Bucket.SYSTEM,
)


@dataclass(slots=True)
class BudgetBuckets:
    """Token counts per bucket of one view, against the window and its threshold."""

    token_limit: int
    threshold: int
    tokens: dict[Bucket, int] = field(default_factory=lambda: {b: 0 for b in Bucket})

    def add(self, bucket: Bucket, tokens: int) -> None:
        self.tokens[bucket] = self.tokens.get(bucket, 0) + tokens

    @property
    def used(self) -> int:
        return sum(self.tokens.values())

    @property
    def free(self) -> int:
        return max(0, self.token_limit - self.used)

    @property
    def left_before_compact(self) -> int:
        return max(0, self.threshold - self.used)

    def as_dict(self) -> dict[str, int]:
        return {b.value: n for b, n in self.tokens.items()}
