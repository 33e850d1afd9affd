"""Microcompact: clear old tool results in the *view* (spec 000 M7, plus size-triggered clearing).

Clearing replaces a ``ToolMessage``'s content with :data:`CLEARED_PLACEHOLDER` in a copy; the
history, the transcript and the artifact keep the full result. A result that held error lines
keeps its last ones after the placeholder (:func:`cleared_content`): the latest failure is what a
model most needs to see, and on real sessions a plain placeholder hid it. The copy is marked
``response_metadata["mtagent"]["cleared"] = <trigger>``, so clearing twice is harmless, and the
cleared ids are returned so the window manager records one ``microcompact`` record and keeps
them cleared on every later turn.

Two triggers, both in one batch:

* **time** — more than ``gap_threshold_minutes`` (60) since the last assistant message: the
  provider's prompt cache has expired anyway, so the next request pays for the whole prefix;
  clearing old results of compactable tools (keeping the ``keep_recent`` = 5 newest) makes that
  request cheaper at no cache cost.
* **size** (beyond the spec) — the view passes ``size_trigger_fraction`` of the window: clear the
  oldest compactable results *in one batch* down to ``size_target_fraction``, keeping the newest
  ``keep_recent`` and any result the model referred to later (its path or tool-call id appears in
  a later assistant message). Why one batch: a sliding window that clears "everything older than
  N" on every call changes the prompt prefix on every call, and a changed prefix is a prompt-cache
  miss for the whole request. Clearing rarely and deeply keeps the prefix stable for many turns.
  Even so, replaying real sessions (``benchmarks/context_bench.py``) showed any size clearing
  below the auto-compact threshold cost more than it saved — each batch still rewrites the cache
  from the oldest cleared result on, and it postpones the compaction that saves more — so the
  default trigger is the whole window: a safety net for when auto compaction is off or failing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from mtagent.config import MicrocompactSettings
from mtagent.context.compaction.facts import ERROR_LINE, PATH_KEYS, call_path
from mtagent.context.invariants import unanswered_round_start
from mtagent.context.tokens import message_text

CLEARED_PLACEHOLDER = "[Old tool result content cleared. Full result is available in the session transcript artifact.]"
Trigger = Literal["time", "size"]
KEPT_ERROR_LINES = 2
KEPT_ERROR_LINE_CHARS = 300


@dataclass(slots=True)
class MicrocompactResult:
    """The view after clearing and the ids cleared by *this* call (empty when nothing fired)."""

    messages: list[BaseMessage]
    cleared_ids: list[str] = field(default_factory=list)
    trigger: Trigger | None = None
    tokens_saved: int = 0


def is_cleared(message: BaseMessage) -> bool:
    meta = (message.response_metadata or {}).get("mtagent") or {}
    return bool(meta.get("cleared"))


def cleared_content(content: object) -> str:
    """The placeholder, plus the result's last error lines when it had any.

    Deterministic in the original content, so live clearing and resume produce the same bytes.
    """
    text = content if isinstance(content, str) else message_text(ToolMessage(content=content, tool_call_id="x"))
    errors = [line.strip()[:KEPT_ERROR_LINE_CHARS] for line in text.splitlines() if ERROR_LINE.search(line)]
    if not errors:
        return CLEARED_PLACEHOLDER
    return CLEARED_PLACEHOLDER + "\nIts last error lines:\n" + "\n".join(errors[-KEPT_ERROR_LINES:])


def cleared_copy(message: ToolMessage, trigger: str) -> ToolMessage:
    """``message`` with its content replaced by :func:`cleared_content` (the original is untouched)."""
    if is_cleared(message):
        return message
    meta = dict(message.response_metadata or {})
    meta["mtagent"] = {**(meta.get("mtagent") or {}), "cleared": trigger}
    return message.model_copy(update={"content": cleared_content(message.content), "response_metadata": meta})


def compactable_results(
    messages: Sequence[BaseMessage], tools: Collection[str], skip: Collection[str] = ()
) -> list[int]:
    """Indexes of not-yet-cleared results of compactable tools, oldest first."""
    return [
        i for i, m in enumerate(messages)
        if isinstance(m, ToolMessage) and m.name in tools and m.id and m.id not in skip and not is_cleared(m)
    ]


def _newest_compactable(messages: Sequence[BaseMessage], tools: Collection[str], keep: int) -> set[str]:
    """Ids of the ``keep`` newest results of compactable tools (cleared or not), and always those
    of the round the model has not answered yet (it would call the tools again, #38)."""
    start = unanswered_round_start(messages)
    unseen = {str(m.id) for m in messages[start:] if isinstance(m, ToolMessage) and m.id} if start is not None else set()
    if keep <= 0:
        return unseen
    newest: list[str] = []
    for m in reversed(messages):
        if isinstance(m, ToolMessage) and m.name in tools and m.id:
            newest.append(m.id)
            if len(newest) >= keep:
                break
    return set(newest) | unseen


def _clear(messages: Sequence[BaseMessage], ids: set[str], trigger: str) -> list[BaseMessage]:
    return [cleared_copy(m, trigger) if isinstance(m, ToolMessage) and m.id in ids else m for m in messages]


def maybe_time_based_microcompact(
    messages: Sequence[BaseMessage],
    now: float,
    last_assistant_ts: float | None,
    *,
    settings: MicrocompactSettings | None = None,
    already_cleared: Collection[str] = (),
) -> MicrocompactResult:
    """Clear old compactable results when the idle gap exceeds ``gap_threshold_minutes``.

    ``now`` and ``last_assistant_ts`` are POSIX seconds. The ``keep_recent`` newest results of
    compactable tools are kept; older ones not yet cleared are cleared in the returned copy.
    """
    settings = settings or MicrocompactSettings()
    if last_assistant_ts is None or now - last_assistant_ts <= settings.gap_threshold_minutes * 60:
        return MicrocompactResult(list(messages))
    tools = set(settings.compactable_tools)
    keep = _newest_compactable(messages, tools, settings.keep_recent)
    targets = {messages[i].id for i in compactable_results(messages, tools, already_cleared)} - keep
    targets.discard(None)
    if not targets:
        return MicrocompactResult(list(messages))
    cleared = [m.id for m in messages if m.id in targets]
    return MicrocompactResult(_clear(messages, set(cleared), "time"), [str(i) for i in cleared], "time")


_WORD = re.compile(r"[\w./\\:-]+")


def referenced_later(messages: Sequence[BaseMessage], paths_by_call: Mapping[str, str]) -> set[str]:
    """Ids of tool results whose tool-call id or path a *later* assistant message mentions.

    One backward pass: the words of assistant messages seen so far (text and tool-call
    arguments) are collected in a set, so the check is linear in the history's text.
    """
    words: set[str] = set()
    referenced: set[str] = set()
    for message in reversed(messages):
        if isinstance(message, ToolMessage) and message.id:
            path = paths_by_call.get(message.tool_call_id)
            if message.tool_call_id in words or (path and (path in words or _stripped(path) in words)):
                referenced.add(message.id)
        elif isinstance(message, AIMessage):
            for word in _WORD.findall(message_text(message)):
                words.add(word)
                words.add(_stripped(word))
    return referenced


def _stripped(word: str) -> str:
    """A mention as a path: no ``:line`` suffix, no trailing punctuation, no leading ``./``.
    Leading dots stay: stripping them made ``./a.py`` into ``/a.py``, never equal to ``a.py``."""
    return word.split(":", 1)[0].rstrip(".,;-").removeprefix("./")


def _paths_by_call(messages: Iterable[BaseMessage]) -> dict[str, str]:
    paths: dict[str, str] = {}
    for m in messages:
        if isinstance(m, AIMessage):
            for call in m.tool_calls:
                path = call_path(dict(call.get("args") or {}))
                if path and call.get("id"):
                    paths[str(call["id"])] = path
        elif isinstance(m, ToolMessage) and isinstance(m.artifact, dict):
            for key in PATH_KEYS:
                value = m.artifact.get(key)
                if isinstance(value, str) and value:
                    paths.setdefault(m.tool_call_id, value)
                    break
    return paths


def maybe_size_based_microcompact(
    messages: Sequence[BaseMessage],
    tokens: int,
    token_limit: int,
    *,
    token_of: Callable[[BaseMessage], int],
    settings: MicrocompactSettings | None = None,
    already_cleared: Collection[str] = (),
) -> MicrocompactResult:
    """When ``tokens`` passes ``size_trigger_fraction`` of the window, clear old results in one
    batch (oldest first) until the estimate reaches ``size_target_fraction`` of it."""
    settings = settings or MicrocompactSettings()
    if tokens <= token_limit * settings.size_trigger_fraction:
        return MicrocompactResult(list(messages))
    target = token_limit * settings.size_target_fraction
    tools = set(settings.compactable_tools)
    keep = _newest_compactable(messages, tools, settings.keep_recent)
    referenced = referenced_later(messages, _paths_by_call(messages))
    placeholder_tokens: int | None = None
    chosen: set[str] = set()
    saved = 0
    for index in compactable_results(messages, tools, already_cleared):
        if tokens - saved <= target:
            break
        message = messages[index]
        if message.id in keep or message.id in referenced:
            continue
        if placeholder_tokens is None:
            placeholder_tokens = token_of(cleared_copy(message, "size"))  # type: ignore[arg-type]
        gain = token_of(message) - placeholder_tokens
        if gain <= 0:
            continue
        chosen.add(str(message.id))
        saved += gain
    if not chosen:
        return MicrocompactResult(list(messages))
    cleared = [str(m.id) for m in messages if m.id in chosen]
    return MicrocompactResult(_clear(messages, chosen, "size"), cleared, "size", saved)
