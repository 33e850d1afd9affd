"""Cache-aligned summary requests: the last main request, byte for byte, plus one instruction.

A summary request used to be a fresh prompt (hand-off prompt + the history rendered as text): a
provider had never seen it, so the whole history was read at the full input price — the single
dearest call of a long session. Providers cache the longest prefix a request shares with an
earlier one, so the summary request here *is* the main request as it would be sent now (system
prompt, tools, every message of the view, unchanged and in order) with one user instruction
appended. Anthropic serves it from the cache breakpoints the main call set (see
``agent/models.py``); OpenAI-style providers match the prefix automatically.

:class:`AlignedSummarizer` wraps any :class:`~mtagent.context.compaction.summarize.Summarizer`
for one compaction:

* when the inner summarizer can send a raw request (``cache_aligned`` is true and it has
  ``summarize_request``) the first attempt is the aligned request; a prompt-too-long retry (which
  drops rounds, so no prefix can be shared) goes through the inner ``summarize`` as before;
* with ``incremental`` and a previous hand-off, the model is asked for the *delta* only and the
  answer is merged into the previous sheet (:mod:`mtagent.context.compaction.incremental`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.messages import BaseMessage, HumanMessage

from mtagent.context.compaction.incremental import merge_handoffs
from mtagent.context.compaction.summarize import DEFAULT_OUTPUT_TOKENS, ExtractiveSummarizer, Summarizer, handoff_prompt

INSTRUCTION_ID = "compact-instruction"
DELTA_NOTE = (
    "A hand-off from an earlier compaction is at the top of this conversation. Write your part for "
    "what happened AFTER it only: it is merged into that hand-off section by section, so do not "
    "repeat what it already says (its findings are kept)."
)
FULL_NOTE = "Summarize the whole conversation above."


def instruction_text(*, delta: bool, instructions: str | None = None,
                     output_tokens: int = DEFAULT_OUTPUT_TOKENS) -> str:
    """The one user message appended to the cached prefix (the model's part, under its budget)."""
    parts = [handoff_prompt(output_tokens), DELTA_NOTE if delta else FULL_NOTE]
    if instructions:
        parts.append(f"Additional instructions from the user for this summary:\n{instructions}")
    parts.append("Do not call any tool. Write your part of the hand-off now.")
    return "\n\n".join(parts)


def aligned_request(
    prefix: Sequence[BaseMessage], *, delta: bool, instructions: str | None = None,
    output_tokens: int = DEFAULT_OUTPUT_TOKENS,
) -> list[BaseMessage]:
    """``prefix`` unchanged (the same message objects) + the summary instruction."""
    text = instruction_text(delta=delta, instructions=instructions, output_tokens=output_tokens)
    note = HumanMessage(content=text, id=INSTRUCTION_ID)
    return [*prefix, note]


@dataclass(slots=True)
class AlignedSummarizer:
    """One compaction's summarizer: cache-aligned first attempt, incremental merge (see module)."""

    inner: Summarizer
    prefix: Sequence[BaseMessage] = ()
    incremental: bool = True
    _attempts: int = field(default=0, init=False)
    # What the model wrote last (the delta when incremental): the cost trigger learns its size.
    last_output: str | None = field(default=None, init=False)

    @property
    def source(self) -> str:
        if isinstance(self.inner, ExtractiveSummarizer):
            return "extractive"
        return str(getattr(self.inner, "source", "llm"))

    @property
    def aligned(self) -> bool:
        return bool(self.prefix) and bool(getattr(self.inner, "cache_aligned", False)) and hasattr(
            self.inner, "summarize_request"
        )

    def summarize(
        self,
        messages: Sequence[BaseMessage],
        *,
        instructions: str | None = None,
        previous_summary: str | None = None,
    ) -> str:
        delta = self.incremental and bool(previous_summary)
        prior = None if delta else previous_summary
        first = self._attempts == 0
        self._attempts += 1
        if first and self.aligned:
            budget = int(getattr(self.inner, "output_tokens", DEFAULT_OUTPUT_TOKENS))
            request = aligned_request(self.prefix, delta=delta, instructions=instructions, output_tokens=budget)
            text = self.inner.summarize_request(  # type: ignore[attr-defined]
                request, messages, previous_summary=prior
            )
        else:
            text = self.inner.summarize(messages, instructions=instructions, previous_summary=prior)
        self.last_output = text
        return merge_handoffs(previous_summary, text) if delta else text


def align_summarizer(
    summarizer: Summarizer | None, prefix: Sequence[BaseMessage], *, cache_aligned: bool, incremental: bool
) -> Summarizer | None:
    """``summarizer`` wrapped for one compaction, or unchanged when neither feature applies."""
    if summarizer is None:
        summarizer = ExtractiveSummarizer()
    if not cache_aligned and not incremental:
        return summarizer
    return AlignedSummarizer(summarizer, list(prefix) if cache_aligned else [], incremental)
