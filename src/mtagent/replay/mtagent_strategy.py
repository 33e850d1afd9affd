"""The ``mtagent`` strategy: the real engine, fed a recording one model call at a time.

* Each tool result goes through :class:`~mtagent.context.tool_results.budgeter.ToolResultBudgeter` as it
  is produced (per assistant turn, so the aggregate rule applies); oversized results are
  written to a throw-away artifact store and the history keeps the ``<persisted-output>``
  preview, exactly as in a live session.
* Before each call :meth:`ContextWindowManager.prepare` builds the view (microcompact,
  auto-compact with the shared summarizer); the history it returns is kept from then on.
* The engine's clock is the recording's: the time of the model call being replayed, so
  time-based microcompact fires where the recorded session really paused.
* Recorded agents name their tools differently (``Bash``, ``execute_bash``, ``Read``, …). The
  engine is *configured* for those names — the alias gets the limit and compactability of the
  mtagent tool it stands for — and no message is renamed.
* ``mtagent`` runs without session memory; ``mtagent-sm`` adds it (as the agent wires it when
  ``session_memory.enabled``), so auto-compaction tries the notes first. Like every summary in a
  replay, note updates are priced as if a model wrote them: :class:`NotesModelMeter` stands in for the notes model,
  records the exact update request the engine builds (input) and declines to answer, so the
  engine writes the notes with its extractive updater; their size is the priced output.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from mtagent.config import Settings
from mtagent.context.session_memory.manager import SessionMemoryManager
from mtagent.context.tokens import message_text
from mtagent.context.tool_results.budgeter import ToolResultBudgeter, ToolResultPolicy
from mtagent.context.window import ContextWindowManager
from mtagent.replay.strategy_base import StepResult, StrategyContext
from mtagent.replay.summarizer import MeteredSummarizer, SummaryCall
from mtagent.session.artifacts import ArtifactStore
from mtagent.session.schema import parse_timestamp

TOOL_ALIASES: dict[str, str] = {
    "Bash": "shell", "bash": "shell", "execute_bash": "shell", "execute_ipython_cell": "shell",
    "BashOutput": "shell", "TaskOutput": "shell",
    "Read": "read_file", "open": "read_file", "goto": "read_file", "scroll_up": "read_file",
    "scroll_down": "read_file", "view": "read_file",
    "Grep": "grep", "search_dir": "grep", "search_file": "grep", "find_file": "glob", "Glob": "glob", "LS": "ls",
    "Edit": "edit_file", "MultiEdit": "edit_file", "edit": "edit_file", "str_replace_editor": "edit_file",
    "apply_edits": "edit_file", "Write": "write_file", "create": "write_file",
}


def settings_for_recorded_tools(settings: Settings) -> Settings:
    """``settings`` with every recorded tool name treated like the mtagent tool it stands for."""
    tr = settings.tool_results
    policy = ToolResultPolicy.from_settings(tr)
    per_tool = dict(tr.per_tool_max_chars)
    self_limiting = list(tr.self_limiting_tools)
    for alias, target in TOOL_ALIASES.items():
        if alias in per_tool or alias == target:
            continue
        limit = policy.limit_for(target)
        if limit is None:
            self_limiting.append(alias)
        else:
            per_tool[alias] = limit
    compactable = list(settings.microcompact.compactable_tools)
    compactable += [a for a, t in TOOL_ALIASES.items() if t in compactable and a not in compactable]
    return settings.model_copy(
        update={
            "tool_results": tr.model_copy(update={"per_tool_max_chars": per_tool, "self_limiting_tools": self_limiting}),
            "microcompact": settings.microcompact.model_copy(update={"compactable_tools": compactable}),
        }
    )


def message_time(message: BaseMessage) -> float | None:
    meta = (message.response_metadata or {}).get("mtagent") or {}
    value = meta.get("timestamp")
    if isinstance(value, int | float):
        return float(value)
    parsed: datetime | None = parse_timestamp(value)
    return parsed.timestamp() if parsed else None


@dataclass(slots=True)
class NotesModelMeter:
    """The session-memory "model": prices each update request, answers nothing.

    Also the memory's record sink: the ``session_memory_update`` record that follows a request
    carries the tokens of the notes written, which is the output a model would have produced.
    """

    count: Any
    summarizer: MeteredSummarizer
    _pending: int | None = None
    _request: tuple[BaseMessage, ...] | None = None
    # Like the session's own model: an update request may be the main request + one instruction.
    cache_aligned: bool = True

    def invoke(self, request: Sequence[BaseMessage], *args: Any, **kwargs: Any) -> AIMessage:
        self._pending = sum(self.count(message_text(m)) for m in request)
        self._request = tuple(request)
        return AIMessage(content="")

    def append(self, record: dict[str, Any]) -> None:
        if self._pending is not None:
            self.summarizer.calls.append(SummaryCall(self._pending, int(record.get("tokens") or 0), self._request))
            self._pending = None
            self._request = None


@dataclass(slots=True)
class MTAgentStrategy:
    ctx: StrategyContext
    name: str = "mtagent"
    session_memory: bool = False
    _history: list[BaseMessage] = field(default_factory=list)
    _manager: ContextWindowManager | None = None
    _budgeter: ToolResultBudgeter | None = None
    _summarizer: MeteredSummarizer | None = None
    _now: float = 0.0

    def _setup(self) -> None:
        settings = settings_for_recorded_tools(self.ctx.settings)
        self._summarizer = self.ctx.summarizer_factory()
        self._summarizer.message_tokens = self.ctx.counter.message_tokens
        root = self.ctx.workdir
        store = ArtifactStore(root / "artifacts", settings.tool_results.artifact_max_bytes) if root else None
        self._budgeter = ToolResultBudgeter(policy=ToolResultPolicy.from_settings(settings.tool_results), artifacts=store)
        memory = None
        if self.session_memory and store is not None:
            meter = NotesModelMeter(self.ctx.counter._count, self._summarizer)
            memory = SessionMemoryManager(
                path=store.session_memory_path, settings=settings, model=meter, sink=meter,
                counter=self.ctx.counter, token_limit=self.ctx.window,
            )
        self._manager = ContextWindowManager(
            settings,
            summarizer=self._summarizer,
            counter=self.ctx.counter,
            session_memory=memory,
            clock=lambda: self._now,
            token_limit=self.ctx.window,
        )

    def step(self, new_messages: Sequence[BaseMessage]) -> StepResult:
        if self._manager is None:
            self._setup()
        assert self._manager is not None and self._budgeter is not None and self._summarizer is not None
        self._history.extend(self._budget(new_messages))
        for m in reversed(new_messages):
            stamp = message_time(m)
            if stamp is not None:
                self._now = max(self._now, stamp)
                break
        prepared = self._manager.prepare(self._history, system=self.ctx.system)
        self._history = prepared.history
        compacted = prepared.compaction is not None or bool(prepared.cleared_ids)
        return StepResult(list(prepared.messages), compacted, self._summarizer.drain())

    def _budget(self, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        """Budget each assistant turn's results together, as the agent does when they arrive."""
        assert self._budgeter is not None
        out: list[BaseMessage] = []
        turn: list[BaseMessage] = []
        for m in messages:
            if isinstance(m, ToolMessage):
                turn.append(m)
                continue
            if turn:
                out.extend(self._budgeter.budget_turn(turn))
                turn = []
            out.append(m)
        if turn:
            out.extend(self._budgeter.budget_turn(turn))
        return out
