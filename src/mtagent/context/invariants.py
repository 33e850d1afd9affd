"""Message invariants: API-round grouping, safe split points, and view validation (spec 000 M5).

A provider accepts a function-calling conversation only if every ``ToolMessage`` answers a
tool call of the assistant message right before it, and every tool call is answered before the
conversation moves on. Compaction cuts the history in two, so every cut goes through here:

* :func:`round_spans` — one *group* per API round: an ``AIMessage`` plus the
  ``ToolMessage``\\ s answering its ``tool_calls`` (and any assistant chunks of the same provider
  response). Human and system messages, and the compaction summary, are groups of their own.
* :func:`find_safe_split_index` — where to cut so the kept recent tail holds at least
  ``min_tokens`` and at most ``max_tokens``, starts at a group boundary, and never reaches back
  over the last compact boundary.
* :func:`validate_view` — raises :class:`InvalidView` on an orphan result, an unanswered call
  (the pending last round excepted) or a misplaced summary. A view that fails this is a bug.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from mtagent.context.boundary import is_summary_message
from mtagent.errors import MTAgentError


class InvalidView(MTAgentError):
    """A message view breaks the function-calling protocol; the engine must never send it."""

    def __init__(self, index: int, reason: str) -> None:
        self.index = index
        self.reason = reason
        super().__init__(
            f"invalid context view at message {index}: {reason}. This is an mtagent bug; "
            "please report it with the session transcript."
        )


@dataclass(slots=True, frozen=True)
class Group:
    """Messages ``start <= i < end`` of one API round (or one standalone message)."""

    start: int
    end: int

    def __len__(self) -> int:
        return self.end - self.start


def _call_ids(message: BaseMessage) -> set[str]:
    if isinstance(message, AIMessage):
        return {str(call.get("id")) for call in message.tool_calls if call.get("id") is not None}
    return set()


def _provider_response_id(message: BaseMessage) -> str | None:
    meta = message.response_metadata or {}
    rid = meta.get("id")
    return str(rid) if rid else None


def round_spans(messages: Sequence[BaseMessage]) -> list[Group]:
    """The API-round groups of ``messages`` as index spans (see module docstring)."""
    groups: list[Group] = []
    n = len(messages)
    i = 0
    while i < n:
        message = messages[i]
        if not isinstance(message, AIMessage) or is_summary_message(message):
            groups.append(Group(i, i + 1))
            i += 1
            continue
        open_calls = _call_ids(message)
        rid = _provider_response_id(message)
        j = i + 1
        while j < n:
            nxt = messages[j]
            if isinstance(nxt, ToolMessage) and nxt.tool_call_id in open_calls:
                j += 1
            elif isinstance(nxt, AIMessage) and rid is not None and _provider_response_id(nxt) == rid:
                open_calls |= _call_ids(nxt)
                j += 1
            else:
                break
        groups.append(Group(i, j))
        i = j
    return groups


def find_last_compact_boundary(messages: Sequence[BaseMessage]) -> int:
    """Index of the last compaction summary message, or -1 when there is none."""
    for index in range(len(messages) - 1, -1, -1):
        if is_summary_message(messages[index]):
            return index
    return -1


def adjust_index_to_preserve_message_groups(messages: Sequence[BaseMessage], index: int) -> int:
    """Move a cut at ``index`` back to the start of the API-round group that contains it."""
    if index <= 0:
        return 0
    if index >= len(messages):
        return len(messages)
    start = 0
    for group in round_spans(messages):
        if group.start > index:
            break
        start = group.start
    return start


def find_safe_split_index(
    messages: Sequence[BaseMessage],
    *,
    token_of: Callable[[BaseMessage], int],
    min_tokens: int,
    max_tokens: int,
    floor: int | None = None,
) -> int:
    """Where to cut ``messages`` so that ``messages[index:]`` is the recent tail to keep.

    Whole groups are taken from the end while they fit in ``max_tokens``, until the tail holds
    ``min_tokens``. The cut is always a group start and always ``> floor`` (default: the last
    compact boundary — the old summary is re-summarized, never kept raw). If the newest group
    alone is bigger than ``max_tokens`` nothing is kept (the index is ``len(messages)``).
    The result always leaves at least one message after ``floor`` to summarize, or equals
    ``len(messages)``.
    """
    n = len(messages)
    if floor is None:
        floor = find_last_compact_boundary(messages)
    spans = [g for g in round_spans(messages) if g.start > floor]
    kept = 0
    cut = n
    for group in reversed(spans):
        size = sum(token_of(m) for m in messages[group.start:group.end])
        if kept + size > max_tokens:
            break
        kept += size
        cut = group.start
        if kept >= min_tokens:
            break
    first_summarizable = max(floor + 1, 0)
    while first_summarizable < n and isinstance(messages[first_summarizable], SystemMessage):
        first_summarizable += 1
    if cut <= first_summarizable and cut < n:
        later = [g.start for g in spans if g.start > first_summarizable]
        cut = later[0] if later else n
    return cut


def unanswered_round_start(messages: Sequence[BaseMessage]) -> int | None:
    """Where the newest tool round the model has not answered starts, or None.

    That is the last assistant message with tool calls when no assistant message follows it: its
    results are what the model is about to read. A compaction that summarized them away would
    make the model call the same tools again — and a large result would fill the window and be
    compacted away again, for ever (issue #38: 159 compactions on one 6K-token read). So every
    kind of compaction keeps this round whole (see :func:`~mtagent.context.compaction.compactor.compact`).
    """
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if is_summary_message(message):
            return None
        if isinstance(message, AIMessage):
            if not message.tool_calls:
                return None
            return adjust_index_to_preserve_message_groups(messages, index)
    return None


def validate_view(messages: Sequence[BaseMessage], *, allow_pending_last: bool = True) -> None:
    """Raise :class:`InvalidView` unless ``messages`` is a protocol-valid function-calling view.

    Checks: every ``ToolMessage`` answers an open call of the assistant message just before it
    (no orphans, no duplicates); every tool call is answered before another non-tool message
    (except the last round when ``allow_pending_last``); a compaction summary comes before any
    conversation message unless it is a partial summary that closes the view's prefix.
    """
    open_calls: dict[str, int] = {}
    answered: set[str] = set()
    seen_conversation = False
    for index, message in enumerate(messages):
        if isinstance(message, ToolMessage):
            if message.tool_call_id in answered:
                raise InvalidView(index, f"duplicate result for tool call {message.tool_call_id!r}")
            if message.tool_call_id not in open_calls:
                raise InvalidView(index, f"tool result {message.tool_call_id!r} answers no open tool call")
            del open_calls[message.tool_call_id]
            answered.add(message.tool_call_id)
            continue
        if open_calls and not _same_response(messages, index, open_calls):
            call_id = next(iter(open_calls))
            raise InvalidView(open_calls[call_id], f"tool call {call_id!r} has no result before message {index}")
        if is_summary_message(message):
            meta = (message.response_metadata or {}).get("mtagent") or {}
            if seen_conversation and meta.get("direction") != "from":
                raise InvalidView(index, "a compaction summary appears after conversation messages")
            seen_conversation = True
            continue
        if not isinstance(message, SystemMessage):
            seen_conversation = True
        if isinstance(message, AIMessage):
            for call_id in _call_ids(message):
                if call_id in answered or call_id in open_calls:
                    raise InvalidView(index, f"tool call id {call_id!r} is reused")
                open_calls[call_id] = index
    if open_calls and not allow_pending_last:
        call_id = next(iter(open_calls))
        raise InvalidView(open_calls[call_id], f"tool call {call_id!r} has no result")


def _same_response(messages: Sequence[BaseMessage], index: int, open_calls: dict[str, int]) -> bool:
    """An assistant chunk of the same provider response may come before the results."""
    message = messages[index]
    if not isinstance(message, AIMessage):
        return False
    rid = _provider_response_id(message)
    if rid is None:
        return False
    opener = messages[next(iter(open_calls.values()))]
    return _provider_response_id(opener) == rid
