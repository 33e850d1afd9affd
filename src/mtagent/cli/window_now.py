"""``/context`` right after ``/compact``: the window as it is now, before the next model call.

The last plan measured the window before the compaction. Its fixed parts (system prompt, tool
schemas, rules, memory) do not change with a compaction; the conversation parts do, so they are
recounted from the history the session now holds: summary, re-attached files, tool results and
other messages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from langchain_core.messages import BaseMessage, SystemMessage, ToolMessage

from mtagent.context.boundary import is_summary_message
from mtagent.context.budget import Bucket
from mtagent.context.compaction.reattach import REATTACHED_KIND

CONVERSATION = (Bucket.SUMMARY.value, Bucket.MESSAGES.value, Bucket.TOOL_RESULTS.value, Bucket.REATTACHED.value,
                Bucket.RETRIEVED.value)


def _bucket(message: BaseMessage) -> str | None:
    if is_summary_message(message):
        return Bucket.SUMMARY.value
    meta = (message.response_metadata or {}).get("mtagent") or {}
    if isinstance(meta, Mapping) and meta.get("kind") == REATTACHED_KIND:
        return Bucket.REATTACHED.value
    if isinstance(message, SystemMessage):
        return None  # counted in the plan's fixed buckets
    return Bucket.TOOL_RESULTS.value if isinstance(message, ToolMessage) else Bucket.MESSAGES.value


def current_buckets(planned: Mapping[str, int], history: Iterable[BaseMessage],
                    tokens_of: Callable[[BaseMessage], int]) -> dict[str, int]:
    """``planned`` with its conversation buckets recounted from ``history``."""
    out = {key: value for key, value in planned.items() if key not in CONVERSATION}
    out.update({key: 0 for key in CONVERSATION})
    for message in history:
        bucket = _bucket(message)
        if bucket is not None:
            out[bucket] += tokens_of(message)
    return out
