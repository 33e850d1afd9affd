"""ContextMeter: the incremental token view of one history (spec 000 M4, principle 7).

A long session calls ``prepare`` thousands of times on a history that only grows at the end. The
meter keeps the previous call's view (cleared tool results replaced by their placeholders),
per-message token counts, prefix sums and per-bucket totals, keyed by the history's length and its
last message; :meth:`ContextMeter.sync` only processes the appended messages, so a call's cost does
not grow with the session (a changed history — another caller's edit, a resume — is detected and
rebuilt once).

The estimate (:meth:`ContextMeter.measure`) is the provider's reported usage of the last reply plus
the tokens of what came after it; after a compaction or a clearing the *anchor floor* moves past the
kept messages, whose usage describes the old view, and the estimate falls back to a count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from mtagent.context.budget import Bucket
from mtagent.context.compaction.microcompact import cleared_copy
from mtagent.context.plan import CompressedItem, bucket_of
from mtagent.context.tokens import MessageTokenCounter, reported_context_tokens
from mtagent.session.schema import parse_timestamp

__all__ = ["ContextMeter", "message_ts"]


def message_ts(message: BaseMessage) -> float | None:
    """POSIX time an engine-aware writer stamped on a message, if any."""
    meta = (message.response_metadata or {}).get("mtagent") or {}
    value = meta.get("ts", meta.get("timestamp"))
    if isinstance(value, int | float):
        return float(value)
    parsed = parse_timestamp(value)
    return parsed.timestamp() if parsed else None


@dataclass(slots=True)
class _ViewCache:
    """The previous call's view of the history, extended in place when the history grows."""

    view: list[BaseMessage] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    prefix: list[int] = field(default_factory=lambda: [0])
    buckets: dict[Bucket, int] = field(default_factory=dict)
    last: BaseMessage | None = None
    first_id: str | None = None
    anchor: int | None = None
    last_ai_ts: float | None = None
    cleared: int = 0

    def matches(self, history: Sequence[BaseMessage]) -> bool:
        n = len(self.view)
        if len(history) < n or (n and history[0].id != self.first_id):
            return False
        if n == 0:
            return True
        candidate = history[n - 1]
        last = self.last
        return candidate is last or (
            last is not None and candidate.id == last.id and candidate.content == last.content
        )


class ContextMeter:
    """The view of a history the model would see, with its token counts kept incrementally.

    ``cleared`` maps tool-result ids cleared by microcompact to the clearing trigger; those results
    appear in the view as placeholders for as long as they stay in the history.
    """

    def __init__(self, counter: MessageTokenCounter) -> None:
        self.counter = counter
        self.cleared: dict[str, str] = {}
        self._cache = _ViewCache()
        self._anchor_floor = 0
        self._placeholder_tokens: int | None = None

    # ---- reading the view -------------------------------------------------------------------

    @property
    def view(self) -> list[BaseMessage]:
        """The history as sent (cleared results are placeholders). Do not mutate."""
        return self._cache.view

    @property
    def token_list(self) -> list[int]:
        return self._cache.tokens

    @property
    def buckets(self) -> dict[Bucket, int]:
        return self._cache.buckets

    @property
    def cleared_in_view(self) -> int:
        return self._cache.cleared

    @property
    def last_ai_ts(self) -> float | None:
        return self._cache.last_ai_ts

    def view_tokens(self, message: BaseMessage) -> int:
        """Tokens of a view message (a cleared result costs its placeholder)."""
        if (message.response_metadata or {}).get("mtagent", {}).get("cleared"):
            return self._placeholder(message)
        return self.counter.message_tokens(message)

    def measure(self, extra: int) -> tuple[int, bool]:
        """(tokens, anchored): reported usage of the last reply + tokens after it, else a count
        of the view plus ``extra`` (system prompt and tool schemas)."""
        cache = self._cache
        anchor = cache.anchor
        if anchor is not None and anchor >= self._anchor_floor:
            reported = reported_context_tokens(cache.view[anchor]) or 0
            return reported + cache.prefix[-1] - cache.prefix[anchor + 1], True
        return cache.prefix[-1] + extra, False

    # ---- keeping it current -----------------------------------------------------------------

    def sync(self, history: Sequence[BaseMessage]) -> None:
        """Bring the view up to ``history``: append what is new, rebuild once if it changed."""
        cache = self._cache
        if not cache.matches(history):
            self._cache = cache = _ViewCache()
            if self._anchor_floor > len(history):
                self._anchor_floor = 0
        for index in range(len(cache.view), len(history)):
            self._append(index, history[index])
        if history:
            cache.last = history[-1]
            cache.first_id = history[0].id

    def clear(self, history: Sequence[BaseMessage], cleared_ids: Sequence[str], trigger: str) -> list[CompressedItem]:
        """Replace the view's copies of ``cleared_ids`` by placeholders (the history is untouched).

        The reported usage before the clearing counted the full results, so the estimate
        re-anchors on the next reply.
        """
        cache = self._cache
        ids = set(cleared_ids)
        compressed: list[CompressedItem] = []
        for index, message in enumerate(cache.view):
            if message.id in ids and isinstance(message, ToolMessage):
                before = cache.tokens[index]
                copy = cleared_copy(message, trigger)
                cache.view[index] = copy
                after = self._placeholder(copy)
                cache.tokens[index] = after
                cache.buckets[Bucket.TOOL_RESULTS] = cache.buckets.get(Bucket.TOOL_RESULTS, 0) - before + after
                cache.cleared += 1
                compressed.append(CompressedItem(str(message.id), before, after, f"cleared ({trigger})"))
        for cid in cleared_ids:
            self.cleared[cid] = trigger
        prefix = [0]
        for tokens in cache.tokens:
            prefix.append(prefix[-1] + tokens)
        cache.prefix = prefix
        self._anchor_floor = len(history)
        cache.anchor = None
        return compressed

    def rebase(self, new_history: Sequence[BaseMessage]) -> None:
        """Start over on a compacted history: usage reported on the kept messages described the
        old view, so nothing up to here may anchor the estimate."""
        keep_ids = {m.id for m in new_history if m.id}
        self.cleared = {k: v for k, v in self.cleared.items() if k in keep_ids}
        self._cache = _ViewCache()
        self.sync(new_history)
        self._anchor_floor = len(new_history)
        self._cache.anchor = None
        self.counter.forget(keep_ids)

    def _append(self, index: int, message: BaseMessage) -> None:
        cache = self._cache
        if isinstance(message, ToolMessage) and message.id in self.cleared:
            message = cleared_copy(message, self.cleared[message.id])
            cache.cleared += 1
        tokens = self.view_tokens(message)
        cache.view.append(message)
        cache.tokens.append(tokens)
        cache.prefix.append(cache.prefix[-1] + tokens)
        bucket = bucket_of(message)
        cache.buckets[bucket] = cache.buckets.get(bucket, 0) + tokens
        if isinstance(message, AIMessage):
            if index >= self._anchor_floor and reported_context_tokens(message) is not None:
                cache.anchor = index
            ts = message_ts(message)
            if ts is not None:
                cache.last_ai_ts = ts

    def _placeholder(self, cleared: BaseMessage) -> int:
        if self._placeholder_tokens is None:
            probe = cleared.model_copy(update={"id": f"placeholder-probe-{id(self)}"})
            self._placeholder_tokens = self.counter.message_tokens(probe)
        return self._placeholder_tokens
