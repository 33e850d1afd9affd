"""``SubagentRunner``: one per session; starts children for ``task`` calls and merges their reports.

Runtime rules (spec 003 Boundary, v1.3):

* **Bounded.** A child at depth ``subagents.max_depth`` gets no ``task`` tool, and a call that
  reaches a runner at that depth anyway is refused. At most ``max_parallel`` children of the
  whole tree work at once (:mod:`.slots`; threads: the agent's LangGraph loop is synchronous)
  and one assistant message may start at most ``max_per_turn``.
* **Asking.** A child's "ask" reaches the user like the parent's own (:mod:`.asks`).
* **Concurrent.** The graph's tool node runs calls one by one; when it reaches the first ``task``
  call of an assistant message, the runner also starts that message's other ``task`` calls the
  approval policy allows, so they run side by side while the node waits for each in order.
* **Ctrl-C** while waiting cancels every running child (each stops before its next model call; one waiting
  for its own children stops them too), records them as interrupted, and lets the interrupt reach the session.
* **Crash and resume.** A finished child's report is in a ``subagent`` record of the parent's
  transcript the moment it finishes (a resumed session reuses it: :func:`.report.settle_after_crash`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.tools import ToolException

from mtagent.agent.subagents.asks import AskBridge
from mtagent.agent.subagents.child import ChildRun, ChildSpec, SubagentCancelled, run_child
from mtagent.agent.subagents.evidence import complete_report, trace_child
from mtagent.agent.subagents.merge import merge_into_session_memory
from mtagent.agent.subagents.profiles import AgentProfile, ProfileSet, load_profiles
from mtagent.agent.subagents.report import interrupted_result, render_report, unvalidated_report
from mtagent.agent.subagents.slots import TreeSlots
from mtagent.agent.subagents.stored import keep_in_store
from mtagent import paths
from mtagent.session import schema
from mtagent.session.ids import new_child_id
from mtagent.tools.task import TASK_TOOL, TaskRequest, build_task_tool

from mtagent.agent.host import SubagentParent

log = logging.getLogger(__name__)
WAIT_SLICE_SECONDS = 0.1
ModelFactory = Callable[[AgentProfile, TaskRequest], tuple[Any, str]]


@dataclass(slots=True)
class ChildEntry:
    """A child this runner started, by its ``task`` call: its transcript link, its future, then its run."""

    child_id: str
    request: TaskRequest
    profile: AgentProfile
    path: str
    future: Future[ChildRun] | None = None
    run: ChildRun | None = None


def _request_from_call(call: dict[str, Any]) -> TaskRequest | None:
    args = call.get("args") or {}
    if not isinstance(args.get("prompt"), str) or not isinstance(args.get("description"), str):
        return None
    context, files = args.get("context") or [], args.get("files") or []
    if not isinstance(context, list) or not isinstance(files, list):
        return None
    return TaskRequest(tool_call_id=str(call["id"]), description=args["description"], prompt=args["prompt"],
                       agent=str(args.get("agent") or "explore"), context=tuple(map(str, context)),
                       files=tuple(map(str, files)))


class SubagentRunner:
    """See the module docstring. ``model_factory(profile, request) -> (chat model, name)`` picks a
    child's model; the default is the profile's model (a trusted profile), else the parent's."""

    def __init__(self, session: SubagentParent, tools: Any, model: Any, child: ChildSpec | None = None) -> None:
        """It serves the ``task`` tool (:meth:`hosted_tools`) when subagents are enabled at its depth: a main
        session's with the default tools only (``tools`` None: a caller's own list stays as given), a child's
        (``child``) while below ``subagents.max_depth`` and when its profile allows ``task``."""
        self.session = session
        self.depth = child.link.depth if child is not None else 0
        self.model = model
        self.cfg = cfg = session.settings.subagents
        wanted = child.profile.allows(TASK_TOOL) if child is not None else tools is None
        self.hosting = cfg.enabled and self.depth < cfg.max_depth and wanted
        self.model_factory: ModelFactory | None = child.tree.model_factory if child is not None else None
        self.children: dict[str, ChildEntry] = {}  # by tool_call_id
        self._profiles: ProfileSet | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._cancel = threading.Event()
        self._lock = threading.Lock()
        self.asks = AskBridge(session)
        # a child's runner shares its root's slots (max_parallel bounds the whole tree) and its parent's Ctrl-C
        self.slots = child.tree.slots if child is not None else TreeSlots(self.cfg.max_parallel)
        self.parent_cancel: threading.Event | None = child.cancel if child is not None else None

    def hosted_tools(self, _context: Any = None) -> list[Any]:
        """The ``task`` tool when this session hosts subagents, else nothing."""
        return [build_task_tool(self, agents=self.profiles.names)] if self.hosting else []

    # profiles and models --------------------------------------------------------------
    @property
    def profiles(self) -> ProfileSet:
        if self._profiles is None:
            self._profiles = load_profiles(self.session.project_root)
            for warning in self._profiles.warnings:
                log.warning("%s", warning)
        return self._profiles

    def _model_for(self, profile: AgentProfile, request: TaskRequest) -> tuple[Any, str]:
        if self.model_factory is not None:
            return self.model_factory(profile, request)
        if profile.model and profile.trusted:
            from mtagent.agent.models import create_chat_model

            return create_chat_model(profile.model, settings=self.session.settings), profile.model
        return self.model, self.session.model_name

    # launching -------------------------------------------------------------------------
    def launch(self, request: TaskRequest) -> str:
        """The ``task`` tool's body: start (or find) the child, wait for it, return its report."""
        entry = self.children.get(request.tool_call_id)
        if entry is None:
            entry = self._start(request)
            self._start_siblings(request.tool_call_id)
        try:
            run = self._wait(entry)
        except KeyboardInterrupt:
            self.cancel_all()
            raise
        return self._render(entry, run)

    def _check(self, request: TaskRequest) -> AgentProfile:
        if self.depth >= self.cfg.max_depth:
            raise ToolException(f"Error: subagents may not start subagents here (subagents.max_depth = "
                                f"{self.cfg.max_depth}); do the work yourself")
        profile = self.profiles.get(request.agent)
        if profile is None:
            raise ToolException(f"Error: no agent profile {request.agent!r}; use one of "
                                f"{', '.join(self.profiles.names)}")
        started_here = [c for c in self._sibling_calls(request.tool_call_id) if c["id"] in self.children]
        if len(started_here) >= self.cfg.max_per_turn:
            raise ToolException(f"Error: one message may start at most {self.cfg.max_per_turn} subagents "
                                "(subagents.max_per_turn); wait for these reports, then start more")
        return profile

    def _start(self, request: TaskRequest) -> ChildEntry:
        profile = self._check(request)
        child_id = new_child_id()
        path = f"{self.session.session_id}/subagents/{child_id}.jsonl"
        entry = ChildEntry(child_id, request, profile, path)
        with self._lock:
            self.children[request.tool_call_id] = entry
        self._record(entry, "started", description=request.description)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.cfg.max_parallel, thread_name_prefix="subagent")
        entry.future = self._pool.submit(self._run_child, entry)
        return entry

    def _sibling_calls(self, tool_call_id: str) -> list[dict[str, Any]]:
        for message in reversed(self.session.conversation.messages):
            if isinstance(message, AIMessage) and any(c.get("id") == tool_call_id for c in message.tool_calls):
                return [dict(c) for c in message.tool_calls if c.get("name") == TASK_TOOL]
        return []

    def _start_siblings(self, tool_call_id: str) -> None:
        """Start the other ``task`` calls of the same message that need no one's yes."""
        answered = self.session.conversation.answered
        for call in self._sibling_calls(tool_call_id):
            if call["id"] in self.children or call["id"] in answered:
                continue
            if self.session.policy.decide(TASK_TOOL, call.get("args") or {}).decision != "allow":
                continue
            request = _request_from_call(call)
            if request is None:
                continue
            try:
                self._start(request)
            except ToolException:
                return  # the graph reaches this call and reports the same refusal as its result

    def _stopped(self) -> bool:
        return self._cancel.is_set() or (self.parent_cancel is not None and self.parent_cancel.is_set())

    def _wait(self, entry: ChildEntry) -> ChildRun:
        """Wait for a child, serving its (and its siblings') questions to the user meanwhile. A child's
        runner lends its slot while it waits: it works again only once a slot is free."""
        assert entry.future is not None
        with self.slots.lent(self._stopped) if self.depth else nullcontext():
            while True:
                self.asks.serve()
                try:
                    return entry.future.result(timeout=WAIT_SLICE_SECONDS)
                except TimeoutError:
                    if self.parent_cancel is not None and self.parent_cancel.is_set():
                        raise SubagentCancelled("the parent session was interrupted") from None

    # one child --------------------------------------------------------------------------
    def _run_child(self, entry: ChildEntry) -> ChildRun:
        session, request = self.session, entry.request
        transcript = paths.subagent_transcript_path(session.project_root, session.session_id, entry.child_id)
        cancel = self._cancel
        try:
            with self.slots.held(cancel.is_set):
                if cancel.is_set():
                    raise KeyboardInterrupt
                approver = self.asks.approver_for(f"subagent {entry.child_id} ({entry.profile.name})", cancel.is_set)
                report, status, repaired = run_child(
                    session, request, entry.profile, child_id=entry.child_id, depth=self.depth + 1,
                    model=self._model_for(entry.profile, request), cancel=cancel, approver=approver, tree=self)
        except KeyboardInterrupt:
            report, status, repaired = unvalidated_report("stopped before it started", "interrupted"), "interrupted", False
        except Exception as exc:  # noqa: BLE001 - a failing child is a failed report, not a crashed parent
            log.warning("subagent %s failed: %s", entry.child_id, exc)
            text = session.redactor.text(f"{type(exc).__name__}: {exc}")
            report, status, repaired = unvalidated_report(f"the subagent failed: {text}", "failed"), "failed", False
        trace = trace_child(transcript, entry.child_id, max_refs=self.cfg.evidence_max_refs) \
            if transcript.is_file() else None
        if trace is not None:
            report = complete_report(report, trace)
        run = ChildRun(entry.child_id, entry.profile.name, transcript, report, status,
                       trace.usage if trace else {}, repaired)
        keep_in_store(session.artifacts, entry.child_id, transcript)  # PostgreSQL mode: another worker reads it
        entry.run = run
        self._record(entry, status, report=report.model_dump(), usage=run.usage, repaired=repaired)
        if status == "finished":
            merge_into_session_memory(self.session.session_memory, report, child_id=entry.child_id,
                                      agent=entry.profile.name)
        return run

    def _render(self, entry: ChildEntry, run: ChildRun) -> str:
        return render_report(run.report, child_id=entry.child_id, agent=entry.profile.name, transcript=entry.path,
                             max_tokens=self.cfg.report_max_tokens)

    def _record(self, entry: ChildEntry, status: str, **extra: Any) -> None:
        self.session.sink.append(schema.subagent_record(
            entry.child_id, status, tool_call_id=entry.request.tool_call_id, agent=entry.profile.name,
            path=entry.path, depth=self.depth + 1, **extra))

    # stopping and resuming ----------------------------------------------------------------
    def cancel_all(self) -> None:
        """Ctrl-C: stop every running child and wait (bounded) until each has written its end."""
        self._cancel.set()
        deadline = time.monotonic() + self.cfg.cancel_wait_seconds
        for entry in list(self.children.values()):
            if entry.future is None:
                continue
            try:
                entry.future.result(timeout=max(0.0, deadline - time.monotonic()))
            except Exception:  # noqa: BLE001 - still running: recorded as interrupted below
                if entry.run is None:
                    self._record(entry, "interrupted")
        self._cancel = threading.Event()

    def abandon(self) -> None:
        """A new user message while children still run (a turn paused on a child's question): the
        user moved on — stop them (recorded as interrupted) and forget their questions."""
        if any(e.future is not None and not e.future.done() for e in self.children.values()):
            self.cancel_all()
        self.asks.clear()

    def ready_result(self, call: dict[str, Any]) -> tuple[str, str] | None:
        """After Ctrl-C: a ``task`` call whose child ended meanwhile is answered with its report
        (finished) or as interrupted — never as "not run" (``AgentRuntime.ready_result``)."""
        entry = self.children.get(str(call.get("id"))) if call.get("name") == TASK_TOOL else None
        if entry is None or entry.run is None:
            return None
        if entry.run.status == "finished":
            return self._render(entry, entry.run), "success"
        return interrupted_result(entry.child_id, entry.profile.name, entry.path), "error"

    def close(self) -> None:
        if self._pool is not None:
            self._cancel.set()
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
