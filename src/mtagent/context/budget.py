"""The context budget's buckets (spec 003's governance model); a :class:`~mtagent.context.plan.ContextPlan`
fills them per model call. The limit and the auto-compact threshold they are read against are
:func:`mtagent.config.effective_context_limit` and :meth:`~mtagent.config.Settings.auto_compact_threshold_tokens`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

__all__ = ["Bucket", "BudgetBuckets"]


class Bucket(str, Enum):
    """Where a token of the view comes from (spec 003 §九), in drop order last-to-first."""

    SYSTEM = "system"
    TOOLS = "tools"  # built-in tool definitions (and tool_search)
    MCP_TOOLS = "mcp_tools"  # MCP tool definitions sent in full (context/toolset)
    DEFERRED_TOOLS = "deferred_tools"  # deferred tools listed by name, and the post-compaction delta
    SKILLS = "skills"  # the skills listing (name + description)
    MCP_INSTRUCTIONS = "mcp_instructions"  # connected MCP servers' instructions
    RULES = "rules"
    SESSION_CONTEXT = "session_context"
    MEMORY = "memory"
    SUMMARY = "summary"
    MESSAGES = "messages"
    TOOL_RESULTS = "tool_results"
    REATTACHED = "reattached"
    RETRIEVED = "retrieved"  # recall hits for compacted-away identifiers (spec 003: 20%–35%)


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
