"""The one summarizer every summarizing strategy uses in a replay, and what its calls cost.

Comparing context *policies* means holding the summarizing model fixed: every strategy that
summarizes (``mtagent``, ``lc-summarization``, ``threshold-compact``) gets the same
:class:`~mtagent.context.compaction.summarize.ExtractiveSummarizer`, reached through
:class:`ExtractiveChatModel` — a small LangChain chat model whose answer to a list of messages
is their extractive hand-off sheet — so LangChain's middleware can drive it as a model too.

Each call is metered as if a real model had been asked: its input is the request that
strategy would send to a summarizing model (mtagent and threshold-compact: the hand-off prompt
plus the rendered transcript, as :class:`~mtagent.context.compaction.summarize.LLMSummarizer` builds it;
LangChain: its own summary prompt around the XML-formatted messages), its output is the summary.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from mtagent.context.compaction.facts import extract_facts
from mtagent.context.compaction.summarize import ExtractiveSummarizer, LLMSummarizer, render_handoff
from mtagent.context.tokens import count_text_tokens, message_text


@dataclass(slots=True, frozen=True)
class SummaryCall:
    """One summary request: tokens in and out.

    ``request`` is the exact message list when the strategy sent a cache-aligned request (the
    main request + an instruction); the replay then prices the part it shares with the previous
    main request as cache reads. Without it the whole input is uncached.
    """

    input_tokens: int
    output_tokens: int
    request: tuple[BaseMessage, ...] | None = None


class ExtractiveChatModel(BaseChatModel):
    """A chat model that answers with the extractive hand-off of the messages it is given.

    ``model_part`` says what the asking strategy expects a model to write. The peers ask a model
    for the *whole* hand-off sheet — goal, rules, files, state, next step — and get it
    (:func:`~mtagent.context.compaction.summarize.render_handoff`, a previous summary's facts merged
    in, as every summarizing agent's prompt asks). mtagent renders the work-state ledger itself
    and asks the model only for its own part (state, findings, hypotheses, next step:
    :class:`~mtagent.context.compaction.summarize.ExtractiveSummarizer`), so only that part is
    the call's output — and priced as output.
    """

    max_items: int = 12
    model_part: bool = False

    @property
    def _llm_type(self) -> str:
        return "mtagent-extractive"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        previous = kwargs.get("previous_summary")
        if self.model_part:
            text = ExtractiveSummarizer(max_items=self.max_items).summarize(messages, previous_summary=previous)
        else:
            text = render_handoff(extract_facts(messages, previous), max_items=self.max_items)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


@dataclass(slots=True)
class MeteredSummarizer:
    """The shared summarizer behind the ``Summarizer`` protocol, recording each call's cost.

    ``request_tokens(messages, previous_summary)`` prices the request a model summarizer would
    get; by default the hand-off request of :class:`LLMSummarizer`.
    """

    model: ExtractiveChatModel = field(default_factory=ExtractiveChatModel)
    encoding: str = "o200k_base"
    request_tokens: Callable[[Sequence[BaseMessage], str | None], int] | None = None
    calls: list[SummaryCall] = field(default_factory=list)
    cache_aligned: bool = True
    message_tokens: Callable[[BaseMessage], int] | None = None

    def summarize(
        self,
        messages: Sequence[BaseMessage],
        *,
        instructions: str | None = None,
        previous_summary: str | None = None,
    ) -> str:
        reply = self.model.invoke(list(messages), previous_summary=previous_summary)
        text = message_text(reply)
        self.record(messages, previous_summary, text)
        return text

    def summarize_request(
        self,
        request: Sequence[BaseMessage],
        messages: Sequence[BaseMessage] = (),
        *,
        previous_summary: str | None = None,
    ) -> str:
        """A cache-aligned request: the sheet of ``messages``, priced as ``request`` (the main
        request + the instruction) — the replay decides what of it the cache serves."""
        reply = self.model.invoke(list(messages), previous_summary=previous_summary)
        text = message_text(reply)
        count = self.message_tokens or (lambda m: count_text_tokens(message_text(m), self.encoding))
        tokens_in = sum(count(m) for m in request)
        self.calls.append(SummaryCall(tokens_in, count_text_tokens(text, self.encoding), tuple(request)))
        return text

    def record(self, messages: Sequence[BaseMessage], previous_summary: str | None, text: str) -> None:
        if self.request_tokens is not None:
            tokens_in = self.request_tokens(messages, previous_summary)
        else:
            request = LLMSummarizer(model=self.model).build_request(messages, previous_summary=previous_summary)
            tokens_in = sum(count_text_tokens(message_text(m), self.encoding) for m in request)
        self.calls.append(SummaryCall(tokens_in, count_text_tokens(text, self.encoding)))

    def drain(self) -> list[SummaryCall]:
        """The calls made since the last drain."""
        calls, self.calls = self.calls, []
        return calls
