"""Where a session-memory compaction cuts: after what the notes cover, back to a workable tail.

The kept part starts right after the newest message the notes cover, extended back until it holds
the tail's minimum tokens and ``min_text_messages`` text messages (up to the tail's maximum), never
splitting an API round and never reaching over the last compact boundary.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from langchain_core.messages import BaseMessage

from mtagent.config import Settings
from mtagent.context.boundary import is_summary_message
from mtagent.context.compaction.compactor import region_start, tail_bounds
from mtagent.context.invariants import adjust_index_to_preserve_message_groups, find_last_compact_boundary
from mtagent.context.session_memory.triggers import Coverage, is_text_message

__all__ = ["memory_split_index"]


def memory_split_index(
    messages: Sequence[BaseMessage],
    coverage: Coverage,
    *,
    settings: Settings,
    token_of: Callable[[BaseMessage], int],
    available: int,
) -> int | None:
    """The first kept index, or ``None`` when the notes cover nothing here or nothing before the
    tail would be replaced."""
    floor = find_last_compact_boundary(messages)
    last = coverage.last_index(messages)
    if last < 0:
        if floor < 0 or not coverage.ids:
            return None
        last = floor  # everything before the old boundary is in the notes already
    tail_min, tail_max = tail_bounds(settings, available)
    min_text = settings.session_memory.min_text_messages
    start = last + 1
    kept_tokens = sum(token_of(m) for m in messages[start:])
    texts = sum(1 for m in messages[start:] if is_text_message(m))
    while start > floor + 1 and kept_tokens < tail_max and (kept_tokens < tail_min or texts < min_text):
        start -= 1
        kept_tokens += token_of(messages[start])
        texts += is_text_message(messages[start])
    start = max(adjust_index_to_preserve_message_groups(messages, start), floor + 1)
    begin = region_start(messages)
    if start < begin or not any(not is_summary_message(m) for m in messages[begin:start]):
        return None
    return start
