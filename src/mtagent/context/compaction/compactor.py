"""Full and partial compaction → :class:`CompactionResult` (spec 000 M5/M8, spec 002).

A compaction replaces the old part of the history with one summary message (rendered by
:func:`mtagent.context.boundary.summary_message`) and keeps a recent tail::

    before: [summary₀] m₁ … mₖ | mₖ₊₁ … mₙ          (| = safe split, a group start)
    after:  [summary₁] [re-attached files] mₖ₊₁ … mₙ

* The tail holds ``compression_preserve_min_tokens`` (10K) to ``…_max_tokens`` (40K), never
  splits an API round, and never reaches back over the previous boundary: the old summary is
  *re-summarized* (its facts are carried), never kept raw. On a small window the tail is also
  capped at half of the space under the threshold so the new view fits.
* The summarizer is tried with **prompt-too-long retry**: when the summary request itself is
  too long, the oldest API rounds are dropped to cover the provider's reported gap (at least
  ``ptl_min_drop_fraction`` = 20% of rounds), up to ``ptl_retry_max`` (3) times. Dropped rounds
  are condensed extractively into the "previous summary" the model sees, and if the model still
  fails the :class:`~mtagent.context.compaction.summarize.ExtractiveSummarizer` writes the sheet —
  ``/compact`` never answers "conversation too long".
* Every summary is joined to the engine's ledger and passes the hand-off verifier
  (:func:`mtagent.context.compaction.handoff.compose_handoff`).
* Recently read files still current on disk are re-attached (:mod:`mtagent.context.compaction.reattach`).

:func:`build_compaction_result` is the shared back half: session-memory compaction picks its own
split and summary text and calls it, so every compaction produces the same record and view.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from langchain_core.messages import BaseMessage, SystemMessage

from mtagent.config import Settings
from mtagent.context.compaction import facts as F
from mtagent.context.boundary import is_summary_message, summary_message
from mtagent.context.compaction.handoff import compose_handoff
from mtagent.context.ledger import collapse_plan_calls
from mtagent.context.invariants import (
    adjust_index_to_preserve_message_groups,
    find_last_compact_boundary,
    find_safe_split_index,
    round_spans,
    unanswered_round_start,
)
from mtagent.context.model_errors import is_context_length_error, parse_context_length_gap
from mtagent.context.compaction.reattach import RecentReads, build_reattachment
from mtagent.context.compaction.summarize import (
    ExtractiveSummarizer,
    Summarizer,
    SummaryRequestTooLong,
    fit_summary,
)
from mtagent.context.tokens import MessageTokenCounter, count_text_tokens, message_text
from mtagent.errors import CompactionFailed, UsageError
from mtagent.session.ids import new_boundary_id
from mtagent.session.schema import boundary_record as make_boundary_record

Trigger = Literal["manual", "auto", "reactive"]
# Share of the space under the threshold the kept tail may take on a small window
# (the rest is for the summary and re-attached files).
TAIL_SHARE = 0.5


@dataclass(slots=True)
class CompactionResult:
    """What a compaction produced (spec 002 ``CompactionResult``).

    ``new_history()`` is the history the caller keeps from now on; ``boundary_record`` is the
    ``compact_boundary`` transcript record (resume = its summary + messages from
    ``first_kept_id`` on).
    """

    boundary_record: dict[str, Any]
    summary_messages: list[BaseMessage]
    attachments: list[BaseMessage]
    messages_to_keep: list[BaseMessage]
    pre_tokens: int
    post_tokens: int
    summary_source: str
    trigger: str
    summarized_ids: list[str] = field(default_factory=list)
    kept_prefix: list[BaseMessage] = field(default_factory=list)
    ptl_retries: int = 0
    handoff_missing: list[str] = field(default_factory=list)
    fallback_reason: str | None = None

    @property
    def boundary_id(self) -> str:
        return str(self.boundary_record["id"])

    @property
    def summary(self) -> str:
        return str(self.boundary_record.get("summary", ""))

    def new_history(self) -> list[BaseMessage]:
        """``kept_prefix`` (leading system messages, or the kept head of a partial ``from``
        compact) + summary + re-attached files + kept tail."""
        return [*self.kept_prefix, *self.summary_messages, *self.attachments, *self.messages_to_keep]


@dataclass(slots=True, frozen=True)
class SummaryOutcome:
    """A summary text and how it was obtained (``source``: ``llm``, ``extractive``, ``session_memory``)."""

    text: str
    source: str
    ptl_retries: int = 0
    fallback_reason: str | None = None


@dataclass(slots=True, frozen=True)
class CompactionOptions:
    """How one compaction runs and what its record says.

    ``extra_tokens`` is what the view adds around the history (system prompt, tool schemas), so
    ``pre_tokens``/``post_tokens`` describe whole requests; ``pre_tokens`` defaults to a count.
    ``instructions`` (``/compact <instructions>``) go into the summary prompt.
    """

    settings: Settings
    counter: MessageTokenCounter
    trigger: str = "auto"
    reason: str | None = None
    instructions: str | None = None
    read_state: RecentReads | None = None
    pre_tokens: int | None = None
    extra_tokens: int = 0
    token_limit: int | None = None
    root: Path | None = None
    boundary_id: str | None = None
    rules: tuple[str, ...] = ()  # the rule files in force (the system prompt's sources): the ledger names them


def _text_counter(settings: Settings) -> Callable[[str], int]:
    encoding = settings.context.encoding
    return lambda text: count_text_tokens(text, encoding)


def _system_prefix_end(messages: Sequence[BaseMessage]) -> int:
    index = 0
    while index < len(messages) and isinstance(messages[index], SystemMessage):
        index += 1
    return index


def region_start(messages: Sequence[BaseMessage]) -> int:
    """First message a compaction covers: the last full summary (re-summarized), else the
    first non-system message. Anything between is already represented by that summary."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if is_summary_message(message):
            meta = (message.response_metadata or {}).get("mtagent") or {}
            if meta.get("direction") != "from":
                return index
    return _system_prefix_end(messages)


def previous_summaries(messages: Sequence[BaseMessage]) -> str | None:
    texts = [F.summary_body(message_text(m)) for m in messages if is_summary_message(m)]
    return "\n\n".join(texts) if texts else None


def truncate_head_for_ptl_retry(
    messages: Sequence[BaseMessage],
    token_gap: int | None,
    *,
    token_of: Callable[[BaseMessage], int],
    min_drop_fraction: float,
) -> tuple[list[BaseMessage], list[BaseMessage]] | None:
    """Drop the oldest API rounds to cover ``token_gap`` (at least ``min_drop_fraction`` of them).

    Returns ``(dropped, remaining)``, or None when fewer than two rounds are left; at least one
    round always remains to be summarized.
    """
    spans = round_spans(messages)
    if len(spans) < 2:
        return None
    drop = max(1, math.ceil(len(spans) * min_drop_fraction))
    if token_gap:
        covered = 0
        for count, span in enumerate(spans, 1):
            covered += sum(token_of(m) for m in messages[span.start:span.end])
            if covered >= token_gap:
                drop = max(drop, count)
                break
        else:
            drop = len(spans)
    drop = min(drop, len(spans) - 1)
    cut = spans[drop].start
    return list(messages[:cut]), list(messages[cut:])


def summarize_with_retry(
    summarizer: Summarizer,
    messages: Sequence[BaseMessage],
    *,
    settings: Settings,
    counter: MessageTokenCounter,
    instructions: str | None = None,
    previous_summary: str | None = None,
) -> SummaryOutcome:
    """Run ``summarizer`` with prompt-too-long retry; fall back to extractive on failure."""
    body = [m for m in messages if not is_summary_message(m)]
    if isinstance(summarizer, ExtractiveSummarizer):
        return SummaryOutcome(
            summarizer.summarize(body, instructions=instructions, previous_summary=previous_summary), "extractive"
        )
    source = str(getattr(summarizer, "source", "llm"))
    attempt_msgs, prior, retries = body, previous_summary, 0
    reason: str | None = None
    for attempt in range(settings.context.ptl_retry_max + 1):
        try:
            text = summarizer.summarize(attempt_msgs, instructions=instructions, previous_summary=prior)
            return SummaryOutcome(text, source, retries)
        except Exception as exc:  # noqa: BLE001 - any model failure falls back; only PTL is retried
            too_long = isinstance(exc, SummaryRequestTooLong) or is_context_length_error(exc)
            reason = f"{type(exc).__name__}: {exc}"
            if not too_long or attempt == settings.context.ptl_retry_max:
                break
            gap = exc.token_gap if isinstance(exc, SummaryRequestTooLong) else parse_context_length_gap(exc)
            cut = truncate_head_for_ptl_retry(
                attempt_msgs, gap, token_of=counter.message_tokens,
                min_drop_fraction=settings.context.ptl_min_drop_fraction,
            )
            if cut is None:
                break
            dropped, attempt_msgs = cut
            prior = ExtractiveSummarizer().summarize(dropped, previous_summary=prior)
            retries += 1
    text = ExtractiveSummarizer().summarize(body, instructions=instructions, previous_summary=previous_summary)
    return SummaryOutcome(text, "extractive", retries, reason)


def available_tokens(settings: Settings, token_limit: int | None, extra_tokens: int) -> int:
    """Room under the auto-compact threshold (of this fixed part) for summary + re-attachments + tail."""
    threshold = settings.auto_compact_threshold_tokens(token_limit, extra_tokens)
    return max(1, threshold - extra_tokens)


def tail_bounds(settings: Settings, available: int) -> tuple[int, int]:
    ctx = settings.context
    tail_max = min(ctx.compression_preserve_max_tokens, int(available * TAIL_SHARE))
    return min(ctx.compression_preserve_min_tokens, tail_max), tail_max


def build_compaction_result(
    messages: Sequence[BaseMessage],
    split_index: int,
    outcome: SummaryOutcome,
    options: CompactionOptions,
    *,
    previous_summary: str | None = None,
    keep_unanswered: bool = True,
) -> CompactionResult:
    """Summary + tail + re-attachments + ``compact_boundary`` record for a chosen split.

    ``messages[region_start:split_index]`` is what ``summary`` stands for; ``messages[split_index:]``
    is kept. The summary is verified (missing facts carried) and trimmed to fit. Whatever split a
    caller chose (session memory picks its own), the newest unanswered tool round is kept
    (:func:`~mtagent.context.invariants.unanswered_round_start`).
    """
    settings, counter, trigger = options.settings, options.counter, options.trigger
    extra_tokens, token_limit, pre_tokens = options.extra_tokens, options.token_limit, options.pre_tokens
    start = region_start(messages)
    if keep_unanswered:
        room = available_tokens(settings, token_limit, extra_tokens)
        split_index = keep_unanswered_round(messages, split_index, start, counter, room)
    if not start <= split_index <= len(messages):
        raise CompactionFailed(f"split index {split_index} is outside the compactable region [{start}, {len(messages)}]")
    summarized = list(messages[start:split_index])
    kept = list(messages[split_index:])
    if previous_summary is None:
        previous_summary = previous_summaries(summarized)
    check = compose_handoff(outcome.text, summarized, kept, previous_summary=previous_summary,  # ledger + model part
                            rules=options.rules)
    if check.ledger and check.ledger.get("plan"):  # the plan is in the hand-off: the tail's plan calls collapse
        kept = collapse_plan_calls(kept)
    count = _text_counter(settings)
    available = available_tokens(settings, token_limit, extra_tokens)
    kept_tokens = counter.estimate(kept)
    summary_cap = max(1, min(settings.context.summary_reserved_tokens, available - kept_tokens))
    text = fit_summary(check.summary, summary_cap, count)
    boundary_id = options.boundary_id or new_boundary_id()
    reattach_budget = min(settings.context.reattach_max_tokens, available - kept_tokens - count(text))
    attachment = build_reattachment(
        summarized, kept, message_id=f"reattach-{boundary_id}", max_files=settings.context.reattach_max_files,
        max_tokens=reattach_budget, count=count, read_state=options.read_state, root=options.root,
    )
    attachments = [attachment] if attachment is not None else []
    if pre_tokens is None:
        pre_tokens = counter.estimate(messages) + extra_tokens
    draft = summary_message(boundary_id, text, pre_tokens=pre_tokens, post_tokens=pre_tokens, reason=trigger,
                            ledger=check.ledger)
    post_tokens = counter.estimate([draft, *attachments]) + kept_tokens + extra_tokens
    final = summary_message(boundary_id, text, pre_tokens=pre_tokens, post_tokens=post_tokens, reason=trigger,
                            ledger=check.ledger)
    record = make_boundary_record(
        summary=text, first_kept_id=kept[0].id if kept else None, trigger=trigger,
        reason=options.reason or trigger, pre_tokens=pre_tokens, post_tokens=post_tokens,
        summary_source=outcome.source, boundary_id=boundary_id, ledger=check.ledger,
    )
    return CompactionResult(
        boundary_record=record, summary_messages=[final], attachments=attachments, messages_to_keep=kept,
        pre_tokens=pre_tokens, post_tokens=post_tokens, summary_source=outcome.source, trigger=trigger,
        summarized_ids=[str(m.id) for m in summarized if m.id], ptl_retries=outcome.ptl_retries,
        handoff_missing=list(check.missing), fallback_reason=outcome.fallback_reason,
        kept_prefix=list(messages[:_system_prefix_end(messages[:start])]),
    )


def compact(
    messages: Sequence[BaseMessage], summarizer: Summarizer | None, options: CompactionOptions
) -> CompactionResult:
    """Full compaction of ``messages`` (a history: summary, if any, then conversation).

    Raises :class:`CompactionFailed` only when there is nothing before the recent tail to summarize.
    """
    settings, counter = options.settings, options.counter
    start = region_start(messages)
    available = available_tokens(settings, options.token_limit, options.extra_tokens)
    tail_min, tail_max = tail_bounds(settings, available)
    split = find_safe_split_index(
        messages, token_of=counter.message_tokens, min_tokens=tail_min, max_tokens=tail_max,
        floor=find_last_compact_boundary(messages),
    )
    split = keep_unanswered_round(messages, split, start, counter, available)
    return _compact_range(messages, start, split, summarizer, options)


def keep_unanswered_round(messages: Sequence[BaseMessage], split: int, start: int,
                          counter: MessageTokenCounter, room: int) -> int:
    """``split``, moved back so the newest unanswered tool round is kept.

    Not when the round alone is larger than the ``room`` under the threshold (no view could hold
    it: reads are bounded by the window, so only an unbounded tool's output gets there), nor when
    nothing before it is left to summarize (a compaction must summarize something)."""
    protect = unanswered_round_start(messages)
    if protect is None or protect >= split:
        return split
    if not any(not is_summary_message(m) for m in messages[start:protect]):
        return split
    if counter.estimate(messages[protect:]) > room:
        return split
    return protect


def _compact_range(
    messages: Sequence[BaseMessage], start: int, split: int, summarizer: Summarizer | None, options: CompactionOptions
) -> CompactionResult:
    new_messages = [m for m in messages[start:split] if not is_summary_message(m)]
    if not new_messages:
        raise CompactionFailed(
            "nothing to compact: everything since the last compact boundary is in the recent tail; "
            "continue the conversation, or lower context.compression_preserve_min_tokens"
        )
    previous = previous_summaries(messages[start:split])
    outcome = summarize_with_retry(
        summarizer or ExtractiveSummarizer(), messages[start:split], settings=options.settings,
        counter=options.counter, instructions=options.instructions, previous_summary=previous,
    )
    return build_compaction_result(messages, split, outcome, options, previous_summary=previous)


def _pivot(messages: Sequence[BaseMessage], message_id: str) -> int:
    for index, message in enumerate(messages):
        if message.id == message_id:
            pivot = adjust_index_to_preserve_message_groups(messages, index)
            if pivot <= find_last_compact_boundary(messages):
                raise UsageError(
                    f"message {message_id!r} is before the last compact boundary; "
                    "pick a message after the last summary (see /context)"
                )
            return pivot
    raise UsageError(f"no message with id {message_id!r} in the current history; list ids with /context messages")


def compact_from(
    messages: Sequence[BaseMessage],
    message_id: str,
    summarizer: Summarizer | None,
    options: CompactionOptions,
    *,
    direction: Literal["from", "up_to"] = "up_to",
) -> CompactionResult:
    """Partial compact around ``message_id`` without breaking an API round.

    ``up_to`` (``/compact from <id>``, spec M8): summarize everything before the message's round,
    keep it and what follows. ``from``: keep what precedes the round, summarize it and what
    follows — the prompt prefix stays byte-identical, so a provider's prompt cache still hits.
    The ``from`` boundary record carries ``direction="from"`` and ``pivot_id``: on resume the
    kept messages are those from ``first_kept_id`` up to (not including) ``pivot_id``.
    """
    pivot = _pivot(messages, message_id)
    if direction == "up_to":
        return _compact_range(messages, region_start(messages), pivot, summarizer, options)
    tail = list(messages[pivot:])
    if not tail:
        raise CompactionFailed(f"nothing to compact after message {message_id!r}")
    outcome = summarize_with_retry(
        summarizer or ExtractiveSummarizer(), tail, settings=options.settings, counter=options.counter,
        instructions=options.instructions,
    )
    head = list(messages[:pivot])
    result = build_compaction_result(
        tail, len(tail), outcome, replace(options, extra_tokens=options.extra_tokens + options.counter.estimate(head)),
        keep_unanswered=False,  # a manual "from" summary closes the prefix; the user asked for all of it
    )
    summary_msg = result.summary_messages[0]
    meta = dict(summary_msg.response_metadata)
    meta["mtagent"] = {**meta.get("mtagent", {}), "direction": "from", "pivot_id": message_id}
    result.summary_messages = [summary_msg.model_copy(update={"response_metadata": meta})]
    result.kept_prefix = head
    first = next((m.id for m in head if not isinstance(m, SystemMessage)), None)
    result.boundary_record.update(first_kept_id=first, direction="from", pivot_id=messages[pivot].id)
    return result
