"""Fold new messages into the notes: the model when there is one, extractive otherwise.

The model sees only the newest part that fits ``update_input_max_tokens``; older new messages go
through the extractive updater first. A failing or empty model reply never costs the notes their
update (extractive instead, noted in ``repairs``). The result is trimmed to the section and total
budgets.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from langchain_core.messages import BaseMessage, HumanMessage

from mtagent.config import Settings
from mtagent.context.compaction.summarize import ChatModel
from mtagent.context.session_memory import notes as N
from mtagent.context.session_memory.notes import Notes
from mtagent.context.tokens import message_text

__all__ = ["FoldedNotes", "aligned_update_request", "fold_into_notes", "split_for_model"]

UPDATE_INSTRUCTION_ID = "session-memory-instruction"


@dataclass(slots=True, frozen=True)
class FoldedNotes:
    notes: Notes
    source: str  # "model" | "extractive" | "model+extractive"
    repairs: tuple[str, ...] = ()


def split_for_model(
    new: list[BaseMessage], budget: int, token_of: Callable[[BaseMessage], int]
) -> tuple[list[BaseMessage], list[BaseMessage]]:
    """(older part for the extractive updater, newest part that fits the model request)."""
    used = 0
    cut = len(new)
    for i in range(len(new) - 1, -1, -1):
        used += token_of(new[i])
        if used > budget and cut < len(new):
            break
        cut = i
    return new[:cut], new[cut:]


def aligned_update_request(prefix: Sequence[BaseMessage], notes: Notes, new_messages: int, *,
                           section_max_tokens: int) -> list[BaseMessage]:
    """The cache-aligned notes update: the last main request (``prefix``, unchanged) + one
    instruction holding the notes and naming how many of the messages above are new — the
    provider serves the conversation from its prompt cache (``compaction/cache_align.py``)."""
    prompt = N.SESSION_MEMORY_SYSTEM_PROMPT.format(section_max_tokens=section_max_tokens)
    text = (f"{prompt}\n\nCurrent notes:\n<notes>\n{notes.render()}</notes>\n\n"
            f"Update them with the last {new_messages} messages of the conversation above. Do not call any "
            "tool. Return the complete updated notes file.")
    return [*prefix, HumanMessage(content=text, id=UPDATE_INSTRUCTION_ID)]


def fold_into_notes(
    notes: Notes,
    new: list[BaseMessage],
    *,
    model: ChatModel | None,
    settings: Settings,
    token_of: Callable[[BaseMessage], int],
    count: Callable[[str], int],
    prefix: Sequence[BaseMessage] = (),
) -> FoldedNotes:
    """``prefix`` is the last main request (system + history) when known: a model that shares the
    main request's cache (``cache_aligned``) then gets the cache-aligned request."""
    cfg = settings.session_memory
    source = "extractive"
    repairs: list[str] = []
    if model is not None and N.conversation(new):
        head, tail = split_for_model(new, cfg.update_input_max_tokens, token_of)
        if head:
            notes = N.extractive_update(notes, head)
        if prefix and getattr(model, "cache_aligned", False) and settings.context.cache_aligned_summaries:
            request = aligned_update_request(prefix, notes, len(tail), section_max_tokens=cfg.section_max_tokens)
        else:
            request = N.build_update_request(notes, tail, section_max_tokens=cfg.section_max_tokens,
                                             tool_result_chars=settings.tool_results.preview_chars)
        try:
            reply = model.invoke(request)
            text = message_text(reply) if isinstance(reply, BaseMessage) else str(reply)
        except Exception as exc:  # a failing model must not cost the notes their update
            text = ""
            repairs.append(f"model failed ({exc.__class__.__name__}: {str(exc)[:200]})")
        if text.strip():
            notes, repairs = N.merge_model_reply(notes, text, tail)
            source = "model+extractive" if head else "model"
        else:
            notes = N.extractive_update(notes, tail)
            repairs.append("extractive update used instead of the model")
    else:
        notes = N.extractive_update(notes, new)
    notes = N.enforce_budget(notes, section_max_tokens=cfg.section_max_tokens,
                             total_max_tokens=cfg.total_max_tokens, count=count)
    return FoldedNotes(notes, source, tuple(repairs))
