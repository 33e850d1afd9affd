"""Hand-off summaries: the model's part — its prompt, an LLM summarizer, an extractive one.

A compaction replaces old history with a *hand-off* (spec 003 §十; DESIGN principle 12): not a
recap but what the next engineer needs to continue. It has two parts. The **ledger** — the user's
requests verbatim, constraints, the plan, files, failed commands, the latest verification — is
read from the transcript and rendered by the engine (:mod:`mtagent.context.ledger`, joined in
:func:`mtagent.context.compaction.handoff.compose_handoff`), exactly and for free. A summarizer
writes only the **model's part** (:data:`MODEL_SECTIONS`: current state, findings, hypotheses,
next step) under an output budget (``context.summary_output_tokens``).

* :class:`Summarizer` is the seam: ``summarize(messages, *, instructions=None,
  previous_summary=None) -> str``.
* :class:`LLMSummarizer` asks any LangChain chat model (``.invoke(messages)``) for its part,
  with the user's ``/compact <instructions>`` appended. A provider's context-length rejection
  becomes :class:`SummaryRequestTooLong` (with the reported token gap when the provider says
  it) so the compactor can drop the oldest rounds and retry.
* :class:`ExtractiveSummarizer` writes the same sections from the messages themselves
  (:func:`mtagent.context.compaction.facts.extract_facts`): the default without a model and the fallback
  when the model fails, so ``/compact`` always succeeds.
"""

from __future__ import annotations

import json
import re
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
from mtagent.context.tokens import count_text_tokens, message_text
from mtagent.errors import ContextLengthExceeded, ModelError
from mtagent.frames import frame


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


# The headings of the model's part of a hand-off: what only the model knows. Everything the engine
# can read from the transcript — the user's requests, constraints, plan, files, failed commands,
# verification — is the ledger (context/ledger), rendered by the engine beside this part.
SECTION_FINDINGS = "Findings"
SECTION_HYPOTHESES = "Hypotheses"
MODEL_SECTIONS: tuple[str, ...] = (F.SECTION_STATE, SECTION_FINDINGS, SECTION_HYPOTHESES, F.SECTION_NEXT)
DEFAULT_OUTPUT_TOKENS = 600


def handoff_prompt(output_tokens: int = DEFAULT_OUTPUT_TOKENS) -> str:
    """The instruction for the model's part of a hand-off, with its output budget."""
    return f"""You are compacting the conversation of an AI coding agent. Another instance of \
the agent, with no memory of this conversation, will continue the work from a hand-off.

mtagent itself puts into the hand-off, exactly: the user's first and latest requests verbatim, \
every constraint, the plan with its statuses, files read/created/edited/deleted, failed commands \
with their errors, the latest error line, the latest verification, rules, tools loaded and open \
subagent tasks. Do NOT repeat any of that. Write only what the transcript does not state outright \
and the next engineer needs, under exactly these markdown headings, in this order:
## {F.SECTION_STATE}
Where the work stands and why: what is done, what is half-done, what was decided and on what grounds.
## {SECTION_FINDINGS}
Facts learned from files, logs or tool results that matter next, each with its source (path:line, command).
## {SECTION_HYPOTHESES}
What you suspect but have not confirmed, and how to check it.
## {F.SECTION_NEXT}
The first concrete action to take.

Be specific (paths, names, numbers, error text) and terse: at most {output_tokens} tokens in all. \
Write "(none)" under a heading with nothing to say. Do not invent facts."""


HANDOFF_PROMPT = handoff_prompt()


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
    # The output budget of the model's part (context.summary_output_tokens), stated in the prompt.
    output_tokens: int = DEFAULT_OUTPUT_TOKENS
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
            parts.append(f"Hand-off from an earlier compaction (its findings still hold unless the transcript "
                         f"says otherwise):\n{F.summary_body(previous_summary)}")
        parts.append("Conversation since then:\n"
                     + frame("transcript", render_transcript(messages, tool_result_chars=self.tool_result_chars)))
        if instructions:
            parts.append(f"Additional instructions from the user for this summary:\n{instructions}")
        parts.append("Write your part of the hand-off now.")
        return [SystemMessage(content=handoff_prompt(self.output_tokens)), HumanMessage(content="\n\n".join(parts))]

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
    """The model's part of a hand-off written from the messages alone — deterministic, free.

    What a model would add to the engine's ledger (:mod:`mtagent.context.ledger`): the current
    state (the latest request, the last action, commands run), findings (first lines of recent
    results, with their source) and the next step (the assistant's latest words). ``max_items``
    bounds the lists (recent entries win); ``max_tokens`` (default: the model's output budget) with
    ``count`` trims the part further. :func:`render_handoff` still renders the whole older sheet.
    """

    max_items: int = 12
    max_tokens: int | None = DEFAULT_OUTPUT_TOKENS
    count: Callable[[str], int] | None = None

    def summarize(
        self,
        messages: Sequence[BaseMessage],
        *,
        instructions: str | None = None,
        previous_summary: str | None = None,
    ) -> str:
        found = F.extract_facts([m for m in messages if not is_summary_message(m)])
        text = render_model_part(found, max_items=self.max_items, instructions=instructions)
        if self.max_tokens is not None:
            text = fit_summary(text, self.max_tokens, self.count or count_text_tokens)
        return text


def render_model_part(found: F.SessionFacts, *, max_items: int = 12, instructions: str | None = None) -> str:
    """The model's sections of a hand-off (:data:`MODEL_SECTIONS`) from extracted facts."""
    state = _state_lines(found, instructions)
    # the latest error line and failed commands' errors are the ledger's: a model does not repeat them
    findings = F.tail(found.facts, max(1, max_items * 2 // 3))
    sections = {
        F.SECTION_STATE: bullets(state),
        SECTION_FINDINGS: bullets(findings),
        SECTION_HYPOTHESES: "(none)",
        F.SECTION_NEXT: found.next_step or "(continue with the latest user request)",
    }
    return "\n\n".join(f"## {title}\n{body}" for title, body in sections.items())


def _state_lines(found: F.SessionFacts, instructions: str | None) -> list[str]:
    """The *Current state* lines both renderings share: last action, size, commands, requested focus."""
    state = [f"Last action: {found.last_action}"] if found.last_action else []
    state.append(f"Summarized {found.message_count} messages with {found.tool_call_count} tool calls.")
    if found.commands:  # the commands themselves: failed ones and the verification are in the ledger
        state.append(f"{len(found.commands)} distinct commands run, the last: {found.commands[-1]}")
    if instructions:
        state.append(f"Focus requested for this summary: {instructions}")
    return state


def bullets(items: Sequence[str]) -> str:
    """A hand-off section's list: one ``- item`` a line, ``(none)`` when empty."""
    return "\n".join(f"- {item}" for item in items) if items else "(none)"


def _same_request(goal: str, request: str) -> bool:
    """Whether ``request`` is the one the goal was taken from (the goal may be a clipped copy)."""
    return F.mentions(F.normalize(goal), request) or F.mentions(F.normalize(request), goal.rstrip("…").strip())


def render_handoff(found: F.SessionFacts, *, max_items: int = 12, instructions: str | None = None) -> str:
    """Render :class:`~mtagent.context.compaction.facts.SessionFacts` as the hand-off sheet."""
    state = [f"Latest user request: {found.user_requests[-1]}"] if found.user_requests else []
    state += _state_lines(found, instructions)
    changed = [f"{path} — {why}" if why else path for path, why in found.files_changed.items()]
    failed = F.tail(found.failed_attempts, max_items)
    verification = found.latest_verification or (f"latest error: {found.latest_error}" if found.errors else "")
    goal = found.goal or "(not stated)"
    earlier = [request for request in F.tail(found.user_requests[:-1], max_items)
               if not (found.goal and _same_request(found.goal, request))]  # the goal is not a later request
    if earlier:
        goal += f"\n{F.LATER_REQUESTS}\n" + bullets(earlier)
    sections = {
        F.SECTION_GOAL: goal,
        F.SECTION_CONSTRAINTS: bullets(found.constraints),
        F.SECTION_STATE: bullets(state),
        F.SECTION_FACTS: bullets(F.tail(found.facts, max_items)),
        F.SECTION_FILES_READ: bullets(F.tail(found.files_read, max_items * 2)),
        F.SECTION_FILES_CHANGED: bullets(changed),
        F.SECTION_FAILED: bullets(failed),
        F.SECTION_VERIFICATION: verification or "(none)",
        F.SECTION_NEXT: found.next_step or "(continue with the latest user request)",
    }
    return "\n\n".join(f"## {title}\n{body}" for title, body in sections.items())


# Never cut by :func:`fit_summary`: the user's words, their rules, the plan and what changed.
PROTECTED_SECTIONS = frozenset({F.SECTION_GOAL, F.SECTION_CONSTRAINTS, F.SECTION_FILES_CHANGED, F.SECTION_CARRIED,
                                F.SECTION_LAST_REQUEST, F.SECTION_EARLIER_REQUESTS, "Plan", "Latest error",
                                "Rules in force", "Tools loaded", "Open subagent tasks", F.NOTES_TASK_SPEC})
_FIT_HEADING = re.compile(r"^#{1,3} (.+?)\s*:?\s*$")


def fit_summary(text: str, max_tokens: int, count: Callable[[str], int]) -> str:
    """Trim ``text`` to ``max_tokens`` by dropping the oldest lines of the largest unprotected
    section first (sections start at ``#``/``##``/``###`` headings: a hand-off's and the
    session-memory notes'). The user's words, constraints, the plan, files changed and carried
    facts are never cut, so a sheet made of those alone may stay above the cap."""
    if count(text) <= max_tokens:
        return text
    blocks: list[tuple[str, str, list[str]]] = []  # (title, heading line, body lines)
    for chunk in re.split(r"\n\n(?=#{1,3} )", text):
        first, _, body = chunk.partition("\n")
        heading = _FIT_HEADING.match(first)
        if heading:
            blocks.append((heading.group(1).strip(), first, body.splitlines()))
        else:
            blocks.append(("", "", chunk.splitlines()))

    def render() -> str:
        return "\n\n".join("\n".join([head, *lines]) if head else "\n".join(lines) for _, head, lines in blocks)

    current = render()
    while count(current) > max_tokens:
        candidates = [(sum(len(line) for line in lines), i) for i, (title, _, lines) in enumerate(blocks)
                      if title not in PROTECTED_SECTIONS and lines and lines != ["(trimmed)"]]
        if not candidates:
            break
        _, index = max(candidates)
        title, head, lines = blocks[index]
        if len(lines) > 1:
            lines = lines[1:]
        elif len(lines[0]) > 80:
            lines = [lines[0][: len(lines[0]) // 2].rstrip() + "…"]
        else:
            lines = ["(trimmed)"]
        blocks[index] = (title, head, lines)
        current = render()
    return current
