"""What every replay strategy shares: the per-call result, the protocol and the build context.

Kept apart from the strategies themselves so that each strategy module (the simple ones in
:mod:`mtagent.replay.strategies`, LangChain's in :mod:`mtagent.replay.lc_strategies`, the engine in
:mod:`mtagent.replay.mtagent_strategy`) depends on this vocabulary only, and the registry in
:mod:`mtagent.replay.strategies` depends on them — never the other way round.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from langchain_core.messages import BaseMessage, SystemMessage

from mtagent.config import Settings
from mtagent.context.tokens import MessageTokenCounter
from mtagent.replay.summarizer import MeteredSummarizer, SummaryCall

__all__ = ["StepResult", "Strategy", "StrategyContext"]


@dataclass(slots=True)
class StepResult:
    """The view for one model call and what producing it cost."""

    view: list[BaseMessage]
    compacted: bool = False
    summary_calls: list[SummaryCall] = field(default_factory=list)


class Strategy(Protocol):
    name: str

    def step(self, new_messages: Sequence[BaseMessage]) -> StepResult: ...


@dataclass(slots=True)
class StrategyContext:
    """What every strategy is built from: the recording's system prompt and the window."""

    system: list[SystemMessage]
    window: int
    counter: MessageTokenCounter
    settings: Settings = field(default_factory=Settings)
    summarizer_factory: Callable[[], MeteredSummarizer] = MeteredSummarizer
    workdir: Path | None = None

    @property
    def threshold(self) -> int:
        """Where auto compaction fires for this window and the recording's system prompt (the
        engine's own definition, so every strategy's threshold is the one mtagent fires at)."""
        return self.settings.auto_compact_threshold_tokens(self.window, self.counter.estimate(self.system))
