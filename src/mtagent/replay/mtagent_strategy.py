"""The ``mtagent`` strategy: the engine as shipped, fed a recording one model call at a time.

* The session is opened like every live one, by :func:`~mtagent.context.opener.open_engine_session`
  (in a throw-away files store), and driven through its :class:`EngineSession` exactly as a front
  end drives it: each reply is stamped and recorded (:meth:`~EngineSession.record_reply`), each
  tool result is redacted, budgeted against the results of its turn that arrived before it and
  recorded as it arrives (:meth:`~EngineSession.tool_result` — the live rule: only the newcomer
  can be offloaded), and each model call goes through :meth:`~EngineSession.call_model` (record,
  prepare — microcompact, auto compaction with the shared summarizer —, send); the history it
  returns is kept from then on. Oversized results go to the store's artifact folder and the
  history keeps the ``<persisted-output>`` preview.
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

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from mtagent.config import Settings
from mtagent.context.opener import FixedSystem, OpenedSession, open_engine_session
from mtagent.context.tokens import message_text
from mtagent.context.tool_results.budgeter import ToolResultPolicy
from mtagent.events import Event, EventBus, EventType
from mtagent.replay.strategy_base import StepResult, StrategyContext
from mtagent.replay.summarizer import MeteredSummarizer, SummaryCall
from mtagent.session.files_store import FilesStore
from mtagent.session.schema import new_session_id, parse_timestamp

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

    It also listens for ``session_memory_updated`` on the session's bus: the update that follows a
    request carries the tokens of the notes written, which is the output a model would have produced.
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

    def updated(self, event: Event) -> None:
        if self._pending is not None:
            self.summarizer.calls.append(SummaryCall(self._pending, int(event.data.get("tokens") or 0), self._request))
            self._pending = None
            self._request = None


def _fresh(message: BaseMessage) -> BaseMessage:
    """A copy the session may stamp and record (the recording is shared by every strategy)."""
    return message.model_copy(update={"response_metadata": dict(message.response_metadata or {})})


def _sent(view: list[BaseMessage]) -> Any:
    def invoke(messages: list[BaseMessage]) -> AIMessage:
        view[:] = messages
        return AIMessage(content="")

    return invoke


@dataclass(slots=True)
class MTAgentStrategy:
    """The engine as shipped: a session opened by :func:`~mtagent.context.opener.open_engine_session`
    (in a throw-away files store), fed the recording as a live front end feeds it."""

    ctx: StrategyContext
    name: str = "mtagent"
    session_memory: bool = False
    _session: OpenedSession | None = None
    _history: list[BaseMessage] = field(default_factory=list)
    _summarizer: MeteredSummarizer | None = None
    _now: float = 0.0
    _scratch: tempfile.TemporaryDirectory[str] | None = None  # the store's folder when ctx.workdir is None

    def _open(self) -> OpenedSession:
        settings = replay_settings(self.ctx.settings, self.ctx.window, session_memory=self.session_memory)
        self._summarizer = self.ctx.summarizer_factory()
        self._summarizer.message_tokens = self.ctx.counter.message_tokens
        # the engine renders the ledger itself: the model writes (and is priced for) its own part only
        self._summarizer.model = self._summarizer.model.model_copy(update={"model_part": True})
        workdir = self.ctx.workdir
        if workdir is None:
            self._scratch = tempfile.TemporaryDirectory(prefix="mtagent-replay-")
            workdir = Path(self._scratch.name)
        store = FilesStore(tenant="replay", max_artifact_bytes=settings.tool_results.artifact_max_bytes,
                           fsync="never", home=workdir / "home")
        events = EventBus()
        meter = NotesModelMeter(self.ctx.counter._count, self._summarizer) if self.session_memory else None
        if meter is not None:
            events.subscribe(meter.updated, EventType.SESSION_MEMORY_UPDATED)
        return open_engine_session(
            store, workdir / "project", settings, session_id=new_session_id(), resume=False, model_name=self.name,
            summarizer=self._summarizer, memory_model=meter, events=events, system=FixedSystem(list(self.ctx.system)),
            counter=self.ctx.counter, clock=lambda: self._now)

    def step(self, new_messages: Sequence[BaseMessage]) -> StepResult:
        """Feed the messages since the last model call as they arrived (each reply stamped and
        recorded, each tool result budgeted against its turn's earlier ones, as it arrives), then
        make the call: the view the engine would have sent."""
        if self._session is None:
            self._session = self._open()
        engine = self._session.engine
        assert self._summarizer is not None
        for m in new_messages:
            stamp = message_time(m)
            if stamp is not None:
                self._now = max(self._now, stamp)
            m = _fresh(m)
            if isinstance(m, AIMessage):
                engine.record_reply(m, stamp)
            elif isinstance(m, ToolMessage):
                m = engine.tool_result(m, count=False)
            self._history.append(m)
        view: list[BaseMessage] = []
        call = engine.call_model(self._history, _sent(view))
        self._history = call.view.history
        compacted = call.compacted or bool(call.view.plan.compressed)  # compacted or cleared: a new prefix
        return StepResult(view, compacted, self._summarizer.drain())

    def close(self) -> None:
        """Close the session (its transcript and index); remove the store's folder if it is ours."""
        try:
            if self._session is not None:
                self._session.close()
        finally:
            if self._scratch is not None:
                self._scratch.cleanup()


def replay_settings(settings: Settings, window: int, *, session_memory: bool) -> Settings:
    """The settings a replayed session runs with: the recording's tool names aliased, the window,
    session memory on or off, and no recall index (it lives in the user's home, not the replay's)."""
    settings = settings_for_recorded_tools(settings)
    return settings.model_copy(update={
        "context": settings.context.model_copy(update={"token_limit": window}),
        "session_memory": settings.session_memory.model_copy(update={"enabled": session_memory}),
        "recall": settings.recall.model_copy(update={"enabled": False}),
    })
