"""Context strategies a replay compares, behind one small protocol.

A strategy sees the recording *incrementally*: before every model call, :meth:`Strategy.step`
gets the messages added since the previous call (the previous response, its tool results, new
user input) and returns the view the model would have been sent. Strategies that rewrite
history keep their own state, exactly like the agent they imitate.

* ``raw`` — everything, always (no window management; the reference for ratios).
* ``masking`` — observation masking (Lindenbauer et al., *The Complexity Trap*, arXiv
  2508.21433; SWE-agent's ``LastNObservations``): tool results older than the last
  ``keep_turns`` = 10 assistant turns are replaced by ``Old environment output: (N lines
  omitted)``. No summaries; the view can outgrow the window.
* ``threshold-compact`` — the best-known CLI agent's auto-compact: at the shared threshold
  (``window − 33K`` with default settings) everything but a recent tail (``tail_tokens`` to
  twice that, whole API rounds) becomes one summary.
* ``lc-summarization`` / ``lc-clear-tool-uses`` — LangChain v1's own middleware classes
  (:mod:`mtagent.replay.lc_strategies`).
* ``mtagent`` — the engine (:mod:`mtagent.replay.mtagent_strategy`); ``mtagent-sm`` — the engine
  with session memory, its note updates priced as model calls.

Every threshold-triggered strategy fires at the same token count, mtagent's auto-compact
threshold for the window (``window − 20K − 13K``), so the policies differ, not the trigger.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from mtagent.context.invariants import find_safe_split_index
from mtagent.context.tokens import message_text
from mtagent.errors import UsageError
from mtagent.replay.names import PEERS, STRATEGY_NAMES  # noqa: F401 - re-exported
from mtagent.replay.strategy_base import StepResult, Strategy, StrategyContext  # noqa: F401 - re-exported
from mtagent.replay.summarizer import MeteredSummarizer

MASK_KEEP_TURNS = 10
MASK_PLACEHOLDER = "Old environment output: ({lines} lines omitted)"
CLI_TAIL_TOKENS = 10_000
CLI_SUMMARY_PREFIX = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The conversation is summarized below:\n"
)


@dataclass(slots=True)
class RawStrategy:
    ctx: StrategyContext
    name: str = "raw"
    _view: list[BaseMessage] = field(default_factory=list)

    def step(self, new_messages: Sequence[BaseMessage]) -> StepResult:
        if not self._view:
            self._view.extend(self.ctx.system)
        self._view.extend(new_messages)
        return StepResult(list(self._view))


@dataclass(slots=True)
class MaskingStrategy:
    """Observation masking: O(1) amortized per turn — each turn masks at most one old turn."""

    ctx: StrategyContext
    keep_turns: int = MASK_KEEP_TURNS
    name: str = "masking"
    _view: list[BaseMessage] = field(default_factory=list)
    _turn_results: list[list[int]] = field(default_factory=list)
    _masked_turns: int = 0

    def step(self, new_messages: Sequence[BaseMessage]) -> StepResult:
        if not self._view:
            self._view.extend(self.ctx.system)
        for m in new_messages:
            if isinstance(m, AIMessage):
                self._turn_results.append([])
            elif isinstance(m, ToolMessage) and self._turn_results:
                self._turn_results[-1].append(len(self._view))
            self._view.append(m)
        while len(self._turn_results) - self._masked_turns > self.keep_turns:
            for index in self._turn_results[self._masked_turns]:
                self._view[index] = masked(self._view[index])
            self._masked_turns += 1
        return StepResult(list(self._view))


def masked(message: BaseMessage) -> BaseMessage:
    lines = len(message_text(message).splitlines())
    return message.model_copy(update={"content": MASK_PLACEHOLDER.format(lines=lines)})


@dataclass(slots=True)
class ThresholdCompactStrategy:
    """Compact all but a recent tail into one summary once the view reaches the threshold."""

    ctx: StrategyContext
    tail_tokens: int = CLI_TAIL_TOKENS
    name: str = "threshold-compact"
    _history: list[BaseMessage] = field(default_factory=list)
    _summary: str | None = None
    _summarizer: MeteredSummarizer | None = None
    _count: int = 0

    def step(self, new_messages: Sequence[BaseMessage]) -> StepResult:
        if self._summarizer is None:
            self._summarizer = self.ctx.summarizer_factory()
        self._history.extend(new_messages)
        counter = self.ctx.counter
        compacted = False
        if counter.estimate(self.ctx.system) + counter.estimate(self._history) >= self.ctx.threshold:
            compacted = self._compact()
        return StepResult([*self.ctx.system, *self._history], compacted, self._summarizer.drain())

    def _compact(self) -> bool:
        floor = 0 if self._summary is not None else -1
        split = find_safe_split_index(
            self._history,
            token_of=self.ctx.counter.message_tokens,
            min_tokens=self.tail_tokens,
            max_tokens=2 * self.tail_tokens,
            floor=floor,
        )
        start = floor + 1
        if split <= start:
            return False
        assert self._summarizer is not None
        summary = self._summarizer.summarize(self._history[start:split], previous_summary=self._summary)
        self._summary = summary
        self._count += 1
        message = HumanMessage(content=CLI_SUMMARY_PREFIX + summary, id=f"cli-summary-{self._count}")
        self._history = [message, *self._history[split:]]
        return True


def _lc(name: str, ctx: StrategyContext) -> Strategy:
    from mtagent.replay import lc_strategies  # LangChain's middleware: loaded only when compared

    return lc_strategies.make(name, ctx)


def _mtagent(name: str, ctx: StrategyContext) -> Strategy:
    from mtagent.replay.mtagent_strategy import MTAgentStrategy

    return MTAgentStrategy(ctx, name=name, session_memory=name == "mtagent-sm")


# The registry: every strategy a replay can compare, by name (the names live in replay.names).
REGISTRY: dict[str, Callable[[str, StrategyContext], Strategy]] = {
    "raw": lambda _name, ctx: RawStrategy(ctx),
    "masking": lambda _name, ctx: MaskingStrategy(ctx),
    "threshold-compact": lambda _name, ctx: ThresholdCompactStrategy(ctx),
    "lc-summarization": _lc,
    "lc-clear-tool-uses": _lc,
    "mtagent": _mtagent,
    "mtagent-sm": _mtagent,
}


def make_strategy(name: str, ctx: StrategyContext) -> Strategy:
    """A fresh strategy instance for one replay."""
    factory = REGISTRY.get(name)
    if factory is None:
        raise UsageError(f"unknown strategy {name!r}; choose from {', '.join(STRATEGY_NAMES)}")
    return factory(name, ctx)
