"""Hand-off summaries: the prompt, an LLM summarizer, and an extractive one (no model call).

A compaction replaces old history with a *hand-off sheet* (spec 003 §十): not a recap but what
the next engineer needs to continue — user goal, hard constraints, current state, key facts with
sources, files read, files changed (and why), failed attempts, latest verification, next step.

* :class:`Summarizer` is the seam: ``summarize(messages, *, instructions=None,
  previous_summary=None) -> str``.
* :class:`LLMSummarizer` asks any LangChain chat model (``.invoke(messages)``) for the sheet,
  with the user's ``/compact <instructions>`` appended. A provider's context-length rejection
  becomes :class:`SummaryRequestTooLong` (with the reported token gap when the provider says
  it) so the compactor can drop the oldest rounds and retry.
* :class:`ExtractiveSummarizer` builds the same sections from the messages themselves
  (:func:`mtagent.context.compaction.facts.extract_facts`): the default without a model and the fallback
  when the model fails, so ``/compact`` always succeeds.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from mtagent.context.compaction import facts as F
from mtagent.context.boundary import is_summary_message
from mtagent.context.model_errors import is_context_length_error, parse_context_length_gap
from mtagent.context.tokens import message_text
from mtagent.errors import ContextLengthExceeded, ModelError


class SummaryRequestTooLong(ContextLengthExceeded):
    """The summary request itself exceeded the summarizing model's window."""

    def __init__(self, message: str, *, token_gap: int | None = None) -> None:
        self.token_gap = token_gap
        super().__init__(
            f"summary request too long: {message}. The compactor drops the oldest rounds and retries.",
        )


class SummarizerFailed(ModelError):
    """The summarizing model failed for a reason other than prompt length."""


@runtime_checkable
class Summarizer(Protocol):
    """Turns a stretch of conversation into a hand-off sheet."""

    def summarize(
        self,
        messages: Sequence[BaseMessage],
        *,
        instructions: str | None = None,
        previous_summary: str | None = None,
    ) -> str: ...


class ChatModel(Protocol):
    def invoke(self, input: Any, *args: Any, **kwargs: Any) -> Any: ...


HANDOFF_PROMPT = """You are compacting the conversation of an AI coding agent. Another instance of \
the agent, with no memory of this conversation, will continue the work from your notes alone. \
Write a hand-off sheet, not a recap: it must let the next engineer continue exactly where the \
work stopped.

Use exactly these markdown headings, in this order:
## User goal
What the user ultimately wants done (their words where possible).
## Hard constraints
Every rule, requirement or permission boundary the user stated. Copy each one VERBATIM as a \
"- " bullet; never paraphrase, merge or drop one, including those from the previous hand-off.
## Current state
Where the task stands right now: which step, what is done, what is in progress.
## Key facts
Facts confirmed from files, logs or tool results, each with its source (path:line, command, \
tool call).
## Files read
"- path — what matters in it (note if it may be stale)".
## Files changed
"- path — what changed — why". Include every file created or edited.
## Failed attempts
What was tried and failed, and why, so it is not repeated.
## Latest verification
The last test/build/check command, its result, and the failure output or pass evidence.
## Next step
The first concrete action to take after this hand-off.

Be specific (paths, names, numbers, error text). Write "(none)" under a heading with nothing \
to say. Do not invent facts."""


def render_transcript(messages: Sequence[BaseMessage], *, tool_result_chars: int) -> str:
    """The conversation as plain text for the summarizing model (tool output clipped)."""
    lines: list[str] = []
    for message in messages:
        if is_summary_message(message):
            continue
        if isinstance(message, HumanMessage):
            lines.append(f"[user]\n{message_text(message)}")
        elif isinstance(message, AIMessage):
            text = message.content if isinstance(message.content, str) else message_text(message)
            if text.strip():
                lines.append(f"[assistant]\n{text}")
            for call in message.tool_calls:
                args = json.dumps(call.get("args", {}), ensure_ascii=False, default=str)
                lines.append(f"[assistant calls {call['name']} id={call.get('id')}] {args}")
        elif isinstance(message, ToolMessage):
            body = message_text(message)
            if len(body) > tool_result_chars:
                body = body[:tool_result_chars] + f"\n… [{len(body) - tool_result_chars} more chars]"
            lines.append(f"[tool result {message.name or ''} id={message.tool_call_id} status={message.status}]\n{body}")
        elif isinstance(message, SystemMessage):
            lines.append(f"[system]\n{message_text(message)}")
        else:
            lines.append(f"[{message.type}]\n{message_text(message)}")
    return "\n\n".join(lines)


@dataclass(slots=True)
class LLMSummarizer:
    """A hand-off sheet written by a chat model (any object with ``.invoke(messages)``)."""

    model: ChatModel
    tool_result_chars: int = 4_000
    # True when ``model`` is the main model with the main request's tools bound: a summary request
    # can then be the cached main request + one instruction (compaction/cache_align.py).
    cache_aligned: bool = False

    def build_request(
        self,
        messages: Sequence[BaseMessage],
        *,
        instructions: str | None = None,
        previous_summary: str | None = None,
    ) -> list[BaseMessage]:
        parts: list[str] = []
        if previous_summary:
            parts.append(f"Hand-off from an earlier compaction (carry its goal and constraints forward):\n"
                         f"{F.summary_body(previous_summary)}")
        parts.append("Conversation since then:\n<transcript>\n"
                     f"{render_transcript(messages, tool_result_chars=self.tool_result_chars)}\n</transcript>")
        if instructions:
            parts.append(f"Additional instructions from the user for this summary:\n{instructions}")
        parts.append("Write the hand-off sheet now.")
        return [SystemMessage(content=HANDOFF_PROMPT), HumanMessage(content="\n\n".join(parts))]

    def summarize(
        self,
        messages: Sequence[BaseMessage],
        *,
        instructions: str | None = None,
        previous_summary: str | None = None,
    ) -> str:
        request = self.build_request(messages, instructions=instructions, previous_summary=previous_summary)
        return self.summarize_request(request, messages, previous_summary=previous_summary)

    def summarize_request(
        self,
        request: Sequence[BaseMessage],
        messages: Sequence[BaseMessage] = (),
        *,
        previous_summary: str | None = None,
    ) -> str:
        """Send a ready-made ``request`` (e.g. the cache-aligned one) and return the sheet."""
        try:
            reply = self.model.invoke(list(request))
        except Exception as exc:
            if is_context_length_error(exc):
                raise SummaryRequestTooLong(str(exc), token_gap=parse_context_length_gap(exc)) from exc
            raise SummarizerFailed(f"the summarizing model failed: {exc}; falling back to an extractive summary") from exc
        text = message_text(reply) if isinstance(reply, BaseMessage) else str(reply)
        if not text.strip():
            raise SummarizerFailed("the summarizing model returned an empty summary")
        return text.strip()


@dataclass(slots=True)
class ExtractiveSummarizer:
    """The hand-off sheet built from the messages alone — deterministic, free, never too long.

    ``max_items`` bounds each list section (recent entries win); goal, constraints and files
    changed are never cut. ``max_tokens`` with ``count`` trims list sections further, oldest
    entries first, until the sheet fits.
    """

    max_items: int = 12
    max_tokens: int | None = None
    count: Callable[[str], int] | None = None

    def summarize(
        self,
        messages: Sequence[BaseMessage],
        *,
        instructions: str | None = None,
        previous_summary: str | None = None,
    ) -> str:
        found = F.extract_facts(messages, previous_summary)
        text = render_handoff(found, max_items=self.max_items, instructions=instructions)
        if self.max_tokens is not None and self.count is not None:
            text = fit_summary(text, self.max_tokens, self.count)
        return text


def _bullets(items: Sequence[str]) -> str:
    return "\n".join(f"- {item}" for item in items) if items else "(none)"


def _same_request(goal: str, request: str) -> bool:
    """Whether ``request`` is the one the goal was taken from (the goal may be a clipped copy)."""
    return F.mentions(F.normalize(goal), request) or F.mentions(F.normalize(request), goal.rstrip("…").strip())


def render_handoff(found: F.SessionFacts, *, max_items: int = 12, instructions: str | None = None) -> str:
    """Render :class:`~mtagent.context.compaction.facts.SessionFacts` as the hand-off sheet."""
    state: list[str] = []
    if found.user_requests:
        state.append(f"Latest user request: {found.user_requests[-1]}")
    if found.last_action:
        state.append(f"Last action: {found.last_action}")
    state.append(f"Summarized {found.message_count} messages with {found.tool_call_count} tool calls.")
    if found.commands:
        state.append("Commands run: " + "; ".join(F.tail(found.commands, max_items)))
    if instructions:
        state.append(f"Focus requested for this summary: {instructions}")
    changed = [f"{path} — {why}" if why else path for path, why in found.files_changed.items()]
    failed = F.tail(found.failed_attempts, max_items)
    verification = found.latest_verification or (f"latest error: {found.latest_error}" if found.errors else "")
    goal = found.goal or "(not stated)"
    earlier = [request for request in F.tail(found.user_requests[:-1], max_items)
               if not (found.goal and _same_request(found.goal, request))]  # the goal is not a later request
    if earlier:
        goal += f"\n{F.LATER_REQUESTS}\n" + _bullets(earlier)
    sections = {
        F.SECTION_GOAL: goal,
        F.SECTION_CONSTRAINTS: _bullets(found.constraints),
        F.SECTION_STATE: _bullets(state),
        F.SECTION_FACTS: _bullets(F.tail(found.facts, max_items)),
        F.SECTION_FILES_READ: _bullets(F.tail(found.files_read, max_items * 2)),
        F.SECTION_FILES_CHANGED: _bullets(changed),
        F.SECTION_FAILED: _bullets(failed),
        F.SECTION_VERIFICATION: verification or "(none)",
        F.SECTION_NEXT: found.next_step or "(continue with the latest user request)",
    }
    return "\n\n".join(f"## {title}\n{body}" for title, body in sections.items())


PROTECTED_SECTIONS = frozenset({F.SECTION_GOAL, F.SECTION_CONSTRAINTS, F.SECTION_FILES_CHANGED, F.SECTION_CARRIED})


def fit_summary(text: str, max_tokens: int, count: Callable[[str], int]) -> str:
    """Trim ``text`` to ``max_tokens`` by dropping the oldest lines of the largest unprotected
    section first. Goal, constraints, files changed and carried facts are never cut, so a sheet
    made of those alone may stay above the cap."""
    if count(text) <= max_tokens:
        return text
    blocks: list[tuple[str, list[str]]] = []
    for chunk in text.split("\n\n## "):
        title, _, body = chunk.removeprefix("## ").partition("\n")
        blocks.append((title.strip(), body.splitlines()))

    def render() -> str:
        return "\n\n".join(f"## {title}\n" + "\n".join(lines) for title, lines in blocks)

    current = render()
    while count(current) > max_tokens:
        candidates = [(sum(len(line) for line in lines), i) for i, (title, lines) in enumerate(blocks)
                      if title not in PROTECTED_SECTIONS and lines and lines != ["(trimmed)"]]
        if not candidates:
            break
        _, index = max(candidates)
        title, lines = blocks[index]
        if len(lines) > 1:
            lines = lines[1:]
        elif len(lines[0]) > 80:
            lines = [lines[0][: len(lines[0]) // 2].rstrip() + "…"]
        else:
            lines = ["(trimmed)"]
        blocks[index] = (title, lines)
        current = render()
    return current
