"""LangChain v1's context middleware, driven hook by hook on a recording.

No agent graph runs: we call the middleware the way ``create_agent`` does before each model
call, so what is measured is LangChain's own code.

* ``lc-summarization`` — :class:`langchain.agents.middleware.SummarizationMiddleware`.
  ``before_model(state, runtime)`` may return ``{"messages": [RemoveMessage(REMOVE_ALL),
  summary, *kept]}``; we apply that update to the persistent state, like the graph's reducer.
  Knobs: trigger ``("tokens", threshold)`` (the shared threshold), LangChain's defaults for the
  rest — ``keep=("messages", 20)`` and ``trim_tokens_to_summarize=4000`` (only the newest ~4K
  tokens of the summarized part reach the summarizer). The summarizer is the shared
  extractive one, passed as LangChain's ``summarizer`` callable.
* ``lc-clear-tool-uses`` — :class:`ContextEditingMiddleware` with one
  :class:`ClearToolUsesEdit` (trigger = the shared threshold, LangChain's defaults otherwise:
  ``keep=3``, ``clear_at_least=0``, placeholder ``[cleared]``). ``wrap_model_call(request,
  handler)`` edits a deep copy of the request (the state is untouched) and our handler
  captures the edited messages.

Both count tokens with the same exact counter as every other strategy (LangChain's default is
a chars/4 approximation), so triggers are comparable.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware, SummarizationMiddleware
from langchain.agents.middleware.summarization import DEFAULT_SUMMARY_PROMPT
from langchain.agents.middleware.types import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage, RemoveMessage, get_buffer_string
from langchain_core.runnables import RunnableLambda
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from mtagent.context.tokens import MessageTokenCounter, count_text_tokens
from mtagent.replay.strategy_base import StepResult, StrategyContext
from mtagent.replay.summarizer import ExtractiveChatModel, MeteredSummarizer


def _counter_fn(counter: MessageTokenCounter) -> Any:
    def count(messages: Any) -> int:
        return counter.estimate(m for m in messages if isinstance(m, BaseMessage))

    return count


@dataclass(slots=True)
class LCSummarizationStrategy:
    ctx: StrategyContext
    name: str = "lc-summarization"
    _state: list[BaseMessage] = field(default_factory=list)
    _middleware: SummarizationMiddleware | None = None
    _summarizer: MeteredSummarizer | None = None
    _summaries: int = 0

    def _setup(self) -> None:
        summarizer = self.ctx.summarizer_factory()
        summarizer.request_tokens = self._lc_request_tokens
        self._summarizer = summarizer

        def summarize(messages: list[BaseMessage]) -> str:
            reply = summarizer.model.invoke(messages)
            text = str(reply.content)
            summarizer.record(messages, None, text)
            return text

        own_counter = MessageTokenCounter(encoding=self.ctx.counter.encoding)
        self._middleware = SummarizationMiddleware(
            model=ExtractiveChatModel(profile={"max_input_tokens": self.ctx.window}),
            trigger=("tokens", self.ctx.threshold),
            token_counter=_counter_fn(own_counter),
            summarizer=RunnableLambda(summarize),
        )

    def _lc_request_tokens(self, messages: Sequence[BaseMessage], previous: str | None) -> int:
        prompt = DEFAULT_SUMMARY_PROMPT.format(messages=get_buffer_string(list(messages), format="xml"))
        return count_text_tokens(prompt, self.ctx.counter.encoding)

    def step(self, new_messages: Sequence[BaseMessage]) -> StepResult:
        if self._middleware is None:
            self._setup()
        assert self._middleware is not None and self._summarizer is not None
        self._state.extend(new_messages)
        update = self._middleware.before_model({"messages": self._state}, None)  # type: ignore[arg-type]
        compacted = False
        if update is not None:
            self._state = self._apply(update["messages"])
            compacted = True
        return StepResult([*self.ctx.system, *self._state], compacted, self._summarizer.drain())

    def _apply(self, update: list[Any]) -> list[BaseMessage]:
        """The ``add_messages`` reducer for the one update shape this middleware returns."""
        if not update or not isinstance(update[0], RemoveMessage) or update[0].id != REMOVE_ALL_MESSAGES:
            raise ValueError("SummarizationMiddleware returned an update shape this replay does not know")
        out: list[BaseMessage] = []
        for m in update[1:]:
            if m.id is None:
                self._summaries += 1
                m = m.model_copy(update={"id": f"lc-summary-{self._summaries}"})
            out.append(m)
        return out


@dataclass(slots=True)
class LCClearToolUsesStrategy:
    ctx: StrategyContext
    name: str = "lc-clear-tool-uses"
    _state: list[BaseMessage] = field(default_factory=list)
    _middleware: ContextEditingMiddleware | None = None
    _model: ExtractiveChatModel | None = None
    _cleared: int = 0

    def step(self, new_messages: Sequence[BaseMessage]) -> StepResult:
        if self._middleware is None:
            own_counter = MessageTokenCounter(encoding=self.ctx.counter.encoding)
            self._middleware = ContextEditingMiddleware(
                edits=[ClearToolUsesEdit(trigger=self.ctx.threshold)], token_counter=_counter_fn(own_counter)
            )
            self._model = ExtractiveChatModel()
        self._state.extend(new_messages)
        seen: list[list[BaseMessage]] = []

        def handler(request: ModelRequest) -> ModelResponse:
            seen.append(list(request.messages))
            return ModelResponse(result=[AIMessage(content="")])

        system = self.ctx.system[0] if len(self.ctx.system) == 1 else None
        prefix = [] if system is not None else list(self.ctx.system)
        request = ModelRequest(model=self._model, messages=[*prefix, *self._state], system_message=system)  # type: ignore[arg-type]
        self._middleware.wrap_model_call(request, handler)
        edited = seen[0]
        cleared = sum(1 for m in edited if (m.response_metadata or {}).get("context_editing", {}).get("cleared"))
        view = ([system] if system is not None else []) + edited
        newly_cleared = cleared > self._cleared
        self._cleared = cleared
        return StepResult(view, compacted=newly_cleared)


def make(name: str, ctx: StrategyContext) -> LCSummarizationStrategy | LCClearToolUsesStrategy:
    if name == "lc-summarization":
        return LCSummarizationStrategy(ctx)
    return LCClearToolUsesStrategy(ctx)
