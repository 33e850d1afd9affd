"""EngineSession: what both front ends call for each model call and each tool result.

The CLI's hand-built LangGraph loop (:mod:`mtagent.agent.graph`) and the LangChain middleware
(:mod:`mtagent.integrations.langchain`, :mod:`mtagent.integrations.graph_hook`) are thin adapters
over one object, so a library user gets the same guarantees as a CLI user:

* **prepare** — the window manager's pipeline (meter, microcompact, auto compaction, plan). A
  compaction's new history has the usage of its kept assistant messages cleared: that usage
  described the longer view before the boundary, and a history resumed without this process's
  anchor floor (a checkpoint, a new process) would otherwise compact again at once. The
  transcript keeps the original usage.
* **model calls** — transient provider errors (rate limit, 5xx, timeout, connection) are retried
  with backoff (``agent.max_retries``, ``agent.retry_base_seconds``); a context-length rejection
  (the engine's test, or LangChain's ``ContextOverflowError``) triggers one reactive compaction and
  one retry. Anything else, and a second rejection, propagates as the provider raised it (a
  reactive compaction that cannot shrink the history is its ``__cause__``).
* **transcript** — every message is recorded as it happens (user input when the model is called,
  the reply when it arrives, a tool result when it is produced), once per id (:class:`Recorder`),
  through a redacting sink; engine-synthesised messages (summary, session memory, re-attached
  files) stand for their own records and are never written as messages.
* **tool results** — one budget rule: a result is redacted, held to its tool's limit, then to the
  turn's aggregate limit against the results that arrived before it (already frozen and recorded,
  so only the newcomer can be offloaded), and recorded.
* **at-most-once tools** — a call is announced (``tool_started``) before it runs; a call that
  started but has no result (the process died mid-tool) is answered "unknown outcome" instead of
  running again, also after a resume in a new process (:meth:`ToolGuard.restore`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from mtagent.config import Settings
from mtagent.context.boundary import is_summary_message
from mtagent.context.compaction.reattach import REATTACHED_KIND
from mtagent.context.model_errors import ErrorKind, RetryPolicy, call_with_retries, classify
from mtagent.context.model_gate import GATE
from mtagent.context.requested_compaction import reactive_compact
from mtagent.context.tool_results.repeats import RepeatIndex
from mtagent.context.tool_results.budgeter import ToolResultBudgeter
from mtagent.context.tool_results import streamed
from mtagent.context.window import CallView, ContextWindowManager
from mtagent.errors import CompactionFailed
from mtagent.events import EventBus, EventType, SessionStats
from mtagent.redaction import Redactor
from mtagent.session import schema
from mtagent.session.transcript import RecordSink

__all__ = [
    "EngineCounters",
    "EngineSession",
    "ModelCall",
    "Recorder",
    "ToolGuard",
    "is_engine_message",
    "without_stale_usage",
]

ENGINE_KINDS = frozenset({"session_memory", REATTACHED_KIND})
ERROR_PREVIEW_CHARS = 300  # of a provider error kept in the transcript's retry event
FAILURE_REASON_CHARS = 300  # of a failed tool result, on its tool_finished event (why, not only that)


def is_engine_message(message: BaseMessage) -> bool:
    """Messages the engine synthesises (compaction summary, session memory, re-attached files):
    they stand for their own record types and are rebuilt on resume, never a ``transcript_message``."""
    marks = (message.response_metadata or {}).get("mtagent") or {}
    return is_summary_message(message) or marks.get("kind") in ENGINE_KINDS


def without_stale_usage(history: Sequence[BaseMessage], keep: Container[str | None] = ()) -> list[BaseMessage]:
    """A compacted history minus the usage of its kept assistant messages (see module docstring);
    ``keep``: the ids of messages written after the compaction, whose usage stays."""
    return [m.model_copy(update={"usage_metadata": None})
            if isinstance(m, AIMessage) and m.usage_metadata and m.id not in keep else m for m in history]


def main_call(invoke: Callable[[list[BaseMessage]], AIMessage], sent: list[BaseMessage]) -> AIMessage:
    """``invoke(sent)`` as the main call: background model work (notes) waits until it is answered."""
    with GATE.main_call():
        return invoke(sent)


@dataclass(slots=True)
class ToolGuard:
    """Which tool calls have a result, and which have started: no call ever runs twice."""

    started: set[str] = field(default_factory=set)
    answered: set[str] = field(default_factory=set)
    # The results' records, to hand back (not re-run) a call a front end asks about again (a node
    # re-run after a crash between the result and the checkpoint).
    results: dict[str, dict[str, Any]] = field(default_factory=dict)

    def new_turn(self, call_ids: Iterable[str]) -> None:
        """A new assistant message asks for ``call_ids``: they are new calls, even when a model reuses
        an id; earlier turns' results are no longer asked about, so they are let go."""
        self.results.clear()
        for call_id in call_ids:
            self.started.discard(call_id)
            self.answered.discard(call_id)
            self.results.pop(call_id, None)

    def restore(self, records: Iterable[Mapping[str, Any]]) -> None:
        """Read back started calls and results from transcript records (a resume)."""
        for rec in records:
            kind = rec.get("type")
            if kind == schema.TRANSCRIPT_MESSAGE and rec.get("tool_calls"):
                self.new_turn(str(c.get("id")) for c in rec["tool_calls"] if c.get("id"))
            elif kind == schema.EVENT and rec.get("event") == EventType.TOOL_STARTED.value:
                call_id = (rec.get("data") or {}).get("tool_call_id")
                if call_id:
                    self.started.add(str(call_id))
            elif kind == schema.TRANSCRIPT_MESSAGE and rec.get("tool_call_id"):
                self.answered.add(str(rec["tool_call_id"]))
                self.results[str(rec["tool_call_id"])] = dict(rec)

    def verdict(self, call_id: str) -> Literal["run", "answered", "lost"]:
        if call_id in self.answered:
            return "answered"
        return "lost" if call_id in self.started else "run"


@dataclass(slots=True)
class Recorder:
    """What the session's transcript holds, as the engine writes it: each message once (by id; the
    engine's own messages never), events (on the bus too), and — its ``guard`` — which tool calls
    have started and been answered. ``lock``: the engine holds it too, around a tool result's budget
    and its record, so what is recorded and what the budget counted change together."""

    sink: RecordSink
    events: EventBus = field(default_factory=EventBus)
    guard: ToolGuard = field(default_factory=ToolGuard)
    session_id: str | None = None
    recorded: set[str] = field(default_factory=set)
    lock: threading.RLock = field(default_factory=threading.RLock)

    def record(self, message: BaseMessage) -> bool:
        """Append ``message`` once (by id; one without an id gets one); False when skipped."""
        with self.lock:
            if is_engine_message(message) or (message.id and message.id in self.recorded):
                return False
            if not message.id:
                message.id = schema.new_message_id()
            record = schema.message_to_record(message)  # converted once: written, and kept for a repeated call
            self.sink.append(record)
            self.recorded.add(str(message.id))
            if isinstance(message, ToolMessage):
                self.guard.answered.add(message.tool_call_id)
                self.guard.results[message.tool_call_id] = record
            return True

    def known(self, messages: Iterable[BaseMessage]) -> None:
        """Messages already in the transcript (a resumed history): never written again."""
        with self.lock:
            for message in messages:
                if message.id:
                    self.recorded.add(str(message.id))
                if isinstance(message, ToolMessage):
                    self.guard.answered.add(message.tool_call_id)

    def event(self, event: EventType | str, *, live: Mapping[str, Any] | None = None, **data: Any) -> None:
        """An ``event`` record in the transcript, and the same event on the bus; ``live`` goes on the
        bus only (what a front end shows that the transcript already holds elsewhere)."""
        self.sink.append(schema.event_record(getattr(event, "value", event), data))
        if isinstance(event, EventType):
            extra = {"session_id": self.session_id} if self.session_id else {}
            self.events.emit(event, **extra, **(live or {}), **data)


@dataclass(slots=True)
class EngineCounters:
    retries: int = 0
    executed: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ModelCall:
    """One answered model call: the reply (not yet recorded) and the view it was sent, whose
    ``history`` the caller keeps from now on (``compacted`` when a compaction rewrote it)."""

    reply: AIMessage
    view: CallView
    compacted: bool = False


class EngineSession:
    """One session's engine as both front ends use it (see the module docstring).

    The recorder's sink should already redact every record (:class:`~mtagent.redaction.RedactingSink`);
    ``redactor`` also cleans tool results before the model sees them. Safe to call from tool
    threads running in parallel (the recorder's lock is around recording and budgeting).
    """

    def __init__(
        self,
        window: ContextWindowManager,
        budgeter: ToolResultBudgeter,
        recorder: Recorder,
        *,
        settings: Settings,
        stats: SessionStats,
        redactor: Redactor | None = None,
        system: Any = None,
    ) -> None:
        self.window = window
        self.budgeter = budgeter
        self.settings = settings
        self.stats = stats
        self.redactor = redactor or Redactor()
        self.recorder = recorder
        # The session's system-prompt context (``messages()``, ``conflicts()``, ``fixed_tokens()``):
        # what :meth:`call_model` sends when a front end does not bring its own.
        self.system = system
        self.counters = EngineCounters()
        self._turn_chars = 0  # the text of this turn's results so far: the aggregate budget's base
        # Runs of lines an earlier result in the view holds become a reference (tool_results.repeats).
        self.repeats = RepeatIndex()

    # ── transcript ──

    def record_reply(self, reply: AIMessage, now: float | None = None, *, keep_id: bool = False) -> AIMessage:
        """Stamp the reply with the time it arrived and a stable id, then record it (in place).

        The stamp (``response_metadata["mtagent"]["ts"]``) travels with the message into the
        transcript and any checkpoint, so time-based microcompact sees an idle gap across a resume.
        """
        metadata = reply.response_metadata
        marks = metadata.get("mtagent") or {}
        if now is not None or "ts" not in marks:
            metadata["mtagent"] = {**marks, "ts": self.window.clock() if now is None else now}
        if not reply.id or (reply.id.startswith("lc_run") and not keep_id):
            reply.id = schema.new_message_id()
        with self.recorder.lock:
            self._turn_chars = 0
            self.recorder.guard.new_turn(str(c["id"]) for c in reply.tool_calls if c.get("id"))
            self.recorder.record(reply)
        return reply

    # ── model calls ──

    def prepare(self, history: list[BaseMessage], *, system: Sequence[BaseMessage] = (), tools_tokens: int = 0,
                conflicts: Sequence[Any] = ()) -> CallView:
        """The window pipeline on ``history``; a compacted history comes back without stale usage."""
        with self.recorder.lock:
            view = self.window.prepare(history, system=system, tools_tokens=tools_tokens, conflicts=conflicts)
            self.repeats.retain(m for m in view.messages if isinstance(m, ToolMessage))
        if view.compaction is not None:
            view = replace(view, history=without_stale_usage(view.history))
        return view

    def call_model(
        self,
        history: list[BaseMessage],
        invoke: Callable[[list[BaseMessage]], AIMessage],
        *,
        system: Callable[[], Sequence[BaseMessage]] | None = None,
        tools_tokens: int | None = None,
        strip_system: bool = False,
    ) -> ModelCall:
        """Record the new messages of ``history``, prepare, invoke with transient retries, and on a
        context-length rejection compact reactively and retry once (see the module docstring).

        ``system``/``tools_tokens``: the session's own system prompt and tool catalog unless a front end
        brings its own (the middleware sends the agent's); the authority conflicts are the session's.
        ``invoke`` gets the messages to send (without the system messages when ``strip_system``, for
        front ends that add the system prompt themselves);
        it runs as the main call, so background model work (session-memory notes) waits for it.
        """
        if system is None:
            system = self.system.messages if self.system is not None else tuple
        if tools_tokens is None:
            tools_tokens = self.system.schema_tokens() if self.system is not None else 0
        conflicts = self.system.conflicts if self.system is not None else tuple
        with self.recorder.lock:  # what is new in history, in order
            for message in history:
                self.recorder.record(message)
        cfg = self.settings.agent
        retry = RetryPolicy(cfg.max_retries, cfg.retry_base_seconds)
        reactive_used = False
        while True:
            system_messages = list(system())
            view = self.prepare(history, system=system_messages, tools_tokens=tools_tokens, conflicts=conflicts())
            history = view.history
            sent = list(view.messages[len(system_messages):] if strip_system else view.messages)
            try:
                reply = call_with_retries(lambda: main_call(invoke, sent), retry, on_retry=self._on_retry)
            except Exception as exc:
                if reactive_used or classify(exc) is not ErrorKind.CONTEXT_LENGTH:
                    raise
                reactive_used = True
                history = self.reactive(history, exc, system=system_messages, tools_tokens=tools_tokens)
                continue
            self.stats.model_calls += 1
            return ModelCall(reply, view, reactive_used or view.compaction is not None)

    def _on_retry(self, attempt: int, kind: ErrorKind, exc: BaseException, wait: float) -> None:
        self.counters.retries += 1
        self.recorder.event(EventType.MODEL_RETRY, attempt=attempt, kind=kind.value, wait_seconds=wait,
                          error=self.redactor.text(str(exc))[:ERROR_PREVIEW_CHARS])

    def reactive(self, history: list[BaseMessage], error: BaseException, *, system: Sequence[BaseMessage] = (),
                 tools_tokens: int = 0) -> list[BaseMessage]:
        """The provider rejected ``history`` as too long: compact now (even below the threshold) and
        return the new history; re-raises ``error`` (caused by the failure) when nothing shrinks."""
        self._on_retry(1, ErrorKind.CONTEXT_LENGTH, error, 0)
        try:
            with self.recorder.lock:
                result = reactive_compact(self.window, history, system=system, tools_tokens=tools_tokens)
        except CompactionFailed as failed:
            raise error from failed
        return without_stale_usage(result.new_history())

    # ── tools ──

    def tool_started(self, call_id: str, name: str, args: Mapping[str, Any], **event: Any) -> ToolMessage | Literal[True] | None:
        """Announce a call before it runs (``True`` = run it now).

        A call that already has a result is not run: its result comes back when known (a resumed
        front end asking again), else ``None``. A call that started before and never returned gets
        a recorded "unknown outcome" result — it is never run twice.
        """
        with self.recorder.lock:
            verdict = self.recorder.guard.verdict(call_id)
            if verdict == "answered":
                earlier = self.recorder.guard.results.get(call_id)
                message = schema.record_to_message(earlier) if earlier is not None else None
                return message if isinstance(message, ToolMessage) else None
            if verdict == "lost":  # it started before a crash and never returned
                lost = ToolMessage(f"Unknown outcome: the session stopped while the {name} call was running, and it is "
                                   "never re-run automatically. Check its effects before relying on them.",
                                   tool_call_id=call_id, name=name, status="error", id=schema.new_message_id())
                self.recorder.record(lost)
                return lost
            self.recorder.guard.started.add(call_id)
        self.recorder.event(EventType.TOOL_STARTED, tool_call_id=call_id, tool=name, live={"args": dict(args)}, **event)
        return True

    def record_state(self, messages: Sequence[BaseMessage]) -> list[ToolMessage]:
        """Record a graph state's new messages in order, for front ends that see the state only
        between nodes: replies are stamped, tool results that bypassed :meth:`tool_result` (a tool
        node that was not wrapped) are budgeted now. Returns those results' replacements (same ids)."""
        replaced: list[ToolMessage] = []
        with self.recorder.lock:
            for message in messages:
                if not message.id or message.id in self.recorder.recorded or is_engine_message(message):
                    continue
                if isinstance(message, AIMessage):
                    self.record_reply(message, keep_id=True)
                elif isinstance(message, ToolMessage):
                    replaced.append(self.tool_result(message, count=False))
                else:
                    self.recorder.record(message)
        return replaced

    def tool_result(self, message: ToolMessage, *, tool_name: str | None = None, count: bool = True) -> ToolMessage:
        """Redact, budget (the one rule in the module docstring) and record one tool result."""
        if isinstance(message.content, str) and len(message.content) >= streamed.STREAM_MIN_CHARS:
            message = streamed.persist_huge(self.budgeter, self.redactor, message)  # too big to copy (#33)
        content = self.redactor.text(message.content) if isinstance(message.content, str) else message.content
        update: dict[str, Any] = {} if content is message.content else {"content": content}
        if not message.name and tool_name:
            update["name"] = tool_name
        if not message.id:
            update["id"] = schema.new_message_id()
        if update:  # else the result is built once, by the budget
            message = message.model_copy(update=update)
        with self.recorder.lock:
            final, self._turn_chars = self.budgeter.admit(self.repeats.fold(message), self._turn_chars)
            self.repeats.add(final)
            self.recorder.record(final)
            if count:
                self.counters.executed.append(final.tool_call_id)
        if count:
            self.recorder.event(EventType.TOOL_FINISHED, tool_call_id=final.tool_call_id, tool=final.name,
                              status=final.status, live={"content": str(final.text), "artifact": final.artifact},
                              **_failure_reason(final))
        return final


def _failure_reason(result: ToolMessage) -> dict[str, str]:
    """A failed result's first line (already redacted), so a front end can say why, not only that."""
    if result.status != "error":
        return {}
    text = result.content if isinstance(result.content, str) else str(result.content)
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return {"error": first[:FAILURE_REASON_CHARS]} if first else {}
