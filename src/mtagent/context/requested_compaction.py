"""Compactions someone asks for: ``/compact``, ``/compact from <id>`` (spec M8) and the reactive one
after a provider rejected a request as too long (spec M4).

The window manager's pipeline decides the auto compaction itself; these are asked for from outside
it and run on the same core (:meth:`ContextWindowManager.run_compaction`), measured against the last
call's system prompt when the caller brings none. An ordinary turn runs none of this.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from langchain_core.messages import BaseMessage

from mtagent.context.compaction.compactor import CompactionResult, compact_from
from mtagent.context.compaction.manual import memoise, shrink_or_explain
from mtagent.context.window import ContextWindowManager
from mtagent.events import EventType


def manual_compact(window: ContextWindowManager, history: Sequence[BaseMessage], instructions: str | None = None, *,
                   system: Sequence[BaseMessage] | None = None, tools_tokens: int = 0) -> CompactionResult:
    """``/compact [instructions]``: session memory first when there are no instructions,
    otherwise a full compaction with the instructions in its prompt. Never refused as
    "too long" (prompt-too-long retry, then extractive fallback).

    One that raises — a refusal ("nothing compacted") too — still ends what its ``COMPACT_STARTED``
    began, with ``COMPACT_FAILED``, so a spinner stops with it (auto compactions are ended by the
    policy's failure count instead)."""
    extra, tokens = _measure(window, history, system, tools_tokens)
    try:
        return window.run_compaction(history, trigger="manual", reason=f"/compact {instructions or ''}".strip(),
                                     tokens=tokens, extra=extra, prefer_memory=instructions is None,
                                     instructions=instructions, system=system or ())
    except Exception as exc:
        if window.bus is not None:
            window.bus.emit(EventType.COMPACT_FAILED, trigger="manual", error=str(exc))
        raise


def partial_compact(window: ContextWindowManager, history: Sequence[BaseMessage], message_id: str, *,
                    instructions: str | None = None, system: Sequence[BaseMessage] | None = None,
                    tools_tokens: int = 0) -> CompactionResult:
    """``/compact from <id>``: summarize what precedes the message's round, keep the rest (see
    :func:`mtagent.context.compaction.compactor.compact_from`)."""
    extra, tokens = _measure(window, history, system, tools_tokens)
    options = window.options(trigger="manual", reason=None, tokens=tokens, extra=extra, instructions=instructions)
    memo = memoise(window.summarizer)
    result = shrink_or_explain(
        lambda s: compact_from(history, message_id, memo, replace(options, settings=s)),
        options.settings, tokens, window.summary_tokens_of)
    window.commit(result)
    return result


def reactive_compact(window: ContextWindowManager, history: Sequence[BaseMessage], *,
                     system: Sequence[BaseMessage] | None = None, tools_tokens: int = 0) -> CompactionResult:
    """Forced compaction after the provider rejected a request as too long (spec M4): runs
    even when auto compaction is disabled. Raises :class:`CompactionFailed` when nothing
    can be summarized."""
    extra, tokens = _measure(window, history, system, tools_tokens)
    return window.run_compaction(history, trigger="reactive", reason="provider rejected the request as too long",
                                 tokens=max(tokens, window.token_limit), extra=extra, prefer_memory=True)


def _measure(window: ContextWindowManager, history: Sequence[BaseMessage], system: Sequence[BaseMessage] | None,
             tools_tokens: int) -> tuple[int, int]:
    """(extra, tokens) of ``history`` for a requested compaction; ``system`` None: the last call's."""
    extra = (window.frame.extra if system is None else window.counter.estimate(system)) + tools_tokens
    window.meter.sync(history)
    return extra, window.meter.measure(extra)[0]
