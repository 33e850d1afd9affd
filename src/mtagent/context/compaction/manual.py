"""Manual compaction (``/compact``, ``/compact from``) that shrinks the window or changes nothing.

A user who asks for a compaction expects a smaller window. A summary plus re-attached files can
outweigh a short stretch of conversation, so a manual compaction tries, in order and at most
``context.manual_compact_tries`` times: as configured; without re-attached files (the model can
read them again); then with the summary held to half its last size each time (down to
``context.manual_summary_min_tokens``). The first result smaller than the window before wins;
if none is, :class:`NothingCompacted` says why in one line and nothing is recorded. The summary
is written once: later tries reuse it (the summarizer is memoised), only its cap changes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from mtagent.config import Settings
from mtagent.context.compaction.compactor import CompactionResult
from mtagent.errors import CompactionFailed


class NothingCompacted(CompactionFailed):
    """A manual compaction could not leave a smaller window; the history is unchanged."""


class MemoSummarizer:
    """Asks the wrapped summarizer once per distinct request; repeats return the same text."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self._done: dict[tuple[Any, ...], str] = {}

    def summarize(self, messages: Sequence[BaseMessage], *, instructions: str | None = None,
                  previous_summary: str | None = None) -> str:
        key = (tuple(m.id or id(m) for m in messages), instructions, previous_summary)
        if key not in self._done:
            self._done[key] = self.inner.summarize(messages, instructions=instructions,
                                                   previous_summary=previous_summary)
        return self._done[key]

    def __getattr__(self, name: str) -> Any:  # build_request, tool_result_chars, … of the wrapped one
        return getattr(self.inner, name)


def memoise(summarizer: Any) -> Any:
    """``summarizer`` behind a :class:`MemoSummarizer`, unless it costs nothing to ask again."""
    from mtagent.context.compaction.summarize import ExtractiveSummarizer

    return summarizer if summarizer is None or isinstance(summarizer, ExtractiveSummarizer) else MemoSummarizer(summarizer)


def _with_context(settings: Settings, **changes: Any) -> Settings:
    return settings.model_copy(update={"context": settings.context.model_copy(update=changes)})


def shrink_or_explain(
    attempt: Callable[[Settings], CompactionResult],
    settings: Settings,
    pre_tokens: int,
    summary_tokens: Callable[[CompactionResult], int],
) -> CompactionResult:
    """The first attempt whose window is smaller than ``pre_tokens``; else :class:`NothingCompacted`.

    ``attempt(settings)`` computes (never records) a compaction under the given settings.
    """
    current = settings
    last: CompactionResult | None = None
    floor = settings.context.manual_summary_min_tokens
    for _ in range(max(1, settings.context.manual_compact_tries)):
        result = attempt(current)
        if result.post_tokens < pre_tokens:
            return result
        last = result
        ctx = current.context
        if result.attachments and ctx.reattach_max_files:
            current = _with_context(current, reattach_max_files=0)
            continue
        size = summary_tokens(result)
        cap = max(floor, size // 2)
        if cap >= size:
            break
        current = _with_context(current, reattach_max_files=0, summary_reserved_tokens=cap)
    assert last is not None
    raise NothingCompacted(
        f"nothing compacted: the window stays at {pre_tokens:,} tokens — even a {summary_tokens(last):,}-token "
        f"summary without re-attached files would leave {last.post_tokens:,}; what it would replace is "
        "already short (keep working, then /compact)"
    )
