"""Run one child session: its own transcript, window, tools and approvals, ending in a report.

A child is a full :class:`~mtagent.agent.session.AgentSession` (the same loop, engine, budget,
compaction and transcript guarantees as the main session) with:

* its transcript at ``<history>/<parent-id>/subagents/<child-id>.jsonl``, whose ``session_start``
  names the parent session and the ``task`` call that started it;
* its own window (the profile's, else ``subagents.window_tokens``, else the parent's);
* only the profile's tools — ``explore``/``review`` get no tool that writes or runs commands,
  and the approval policy denies those tools besides (defence in depth);
* the parent's approval rules (``general``); a call that needs the user's yes is put to the
  user through the parent (:mod:`.asks`), exactly as the parent's own call would be;
* a model wrapped so that a cancel (the parent's Ctrl-C) stops it before its next model call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool

from mtagent.agent.approval import ApprovalPolicy
from mtagent.agent.subagents.brief import Brief, build_brief
from mtagent.agent.subagents.profiles import WRITE_TOOLS, AgentProfile
from mtagent.agent.subagents.report import (REPORT_INSTRUCTIONS, SubagentReport, parse_report, repair_request,
                                            unvalidated_report)
from mtagent.config import Settings
from mtagent.events import EventBus, EventType
from mtagent.context.opener import ParentLink
from mtagent.tools import ToolContext, default_tools
from mtagent.tools.task import TaskRequest

from mtagent.agent.host import SubagentParent
from mtagent.agent.turns import ApprovalRequest

class SubagentCancelled(KeyboardInterrupt):
    """The parent was interrupted (Ctrl-C): the child stops before its next model call."""


@dataclass(slots=True, frozen=True)
class ChildTools:
    """The child's tool factory: the default tools its profile allows."""

    profile: AgentProfile

    def __call__(self, context: ToolContext) -> list[BaseTool]:
        tools = default_tools(context.workspace.root, context=context,
                              include_memory=self.profile.allows("save_memory"))
        return [t for t in tools if self.profile.allows(t.name)]


class _Guarded:
    """A bound model that refuses to start a call once the child is cancelled."""

    def __init__(self, inner: Any, cancel: threading.Event) -> None:
        self._inner = inner
        self._cancel = cancel

    def _check(self) -> None:
        if self._cancel.is_set():
            raise SubagentCancelled("the parent session was interrupted")

    def invoke(self, messages: Any, config: Any = None, **kwargs: Any) -> Any:
        self._check()
        return self._inner.invoke(messages, config, **kwargs)

    def stream(self, messages: Any, config: Any = None, **kwargs: Any) -> Iterator[Any]:
        self._check()
        yield from self._inner.stream(messages, config, **kwargs)


@dataclass(slots=True)
class CancellableModel:
    """Duck-types the part of a chat model a session uses (``bind_tools``) and guards the result."""

    inner: Any
    cancel: threading.Event

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> _Guarded:
        return _Guarded(self.inner.bind_tools(tools, **kwargs), self.cancel)

    def invoke(self, messages: Any, config: Any = None, **kwargs: Any) -> Any:
        return _Guarded(self.inner, self.cancel).invoke(messages, config, **kwargs)


@dataclass(slots=True, frozen=True)
class ChildSpec:
    """How a child session is opened, besides its parent's model and settings: its link to the parent
    (``session_start``), its tools, approval policy and role in the system prompt, whether it gets the
    parent's rules, and ``tree`` — the parent's runner, whose model choice and ``max_parallel`` slots
    the whole tree shares — with ``cancel``, the parent's Ctrl-C."""

    link: ParentLink
    profile: AgentProfile
    tools: ChildTools
    policy: ApprovalPolicy
    role: str
    rules: bool
    tree: Any
    cancel: threading.Event


@dataclass(slots=True)
class ChildRun:
    """What one child produced, for the parent's records and display."""

    child_id: str
    agent: str
    transcript: Path
    report: SubagentReport
    status: str  # finished | interrupted | failed
    usage: dict[str, int] = field(default_factory=dict)
    repaired: bool = False


def child_settings(parent: Settings, profile: AgentProfile) -> Settings:
    """The parent's settings with the child's window, step limit and no memory extraction."""
    cfg = parent.subagents
    window = profile.window or cfg.window_tokens or parent.context.token_limit  # the parent's window
    context = parent.context.model_copy(update={"token_limit": window})
    agent = parent.agent.model_copy(update={"max_steps": cfg.max_steps})
    memory = parent.memory.model_copy(update={"auto_extract": False})
    return parent.model_copy(update={"context": context, "agent": agent, "memory": memory})


def child_policy(parent: ApprovalPolicy, profile: AgentProfile) -> ApprovalPolicy:
    """The parent's approvals — its rules, its user's "always" answers and whether its shell runs sandboxed
    (the child's shell runs under the parent's settings) —; a read-only profile additionally denies every
    tool that changes things."""
    policy = ApprovalPolicy(tool_rules=dict(parent.tool_rules), shell_rules=list(parent.shell_rules),
                            mode=parent.mode, remembered=set(parent.remembered),
                            exact_commands=set(parent.exact_commands), sandboxed=parent.sandboxed)
    if profile.tools is not None:
        for tool in WRITE_TOOLS - profile.tools:
            policy.tool_rules[tool] = "deny"
        if "shell" not in profile.tools:
            policy.shell_rules = [("*", "deny")]
    return policy


def open_child(parent: SubagentParent, *, child_id: str, profile: AgentProfile, depth: int, model: Any,
               model_name: str, tool_call_id: str, description: str, cancel: threading.Event,
               rules: bool, tree: Any) -> Any:
    """Open the child's session (the parent's class) through the one opener, as a :class:`ChildSpec`
    says (``tree``: the parent's runner); its ``session_start`` names the parent and the ``task`` call."""
    spec = ChildSpec(ParentLink(parent.session_id, tool_call_id, profile.name, depth, description), profile,
                     ChildTools(profile), child_policy(parent.policy, profile),
                     f"\n## Your role: subagent '{profile.name}'\n{profile.instructions}\n\n{REPORT_INSTRUCTIONS}\n",
                     rules, tree, cancel)
    return type(parent).open(
        parent.project_root, child_id, child_settings(parent.settings, profile),
        CancellableModel(model, cancel), model_name, secrets=parent.redactor.secrets, summarizer_model=None,
        tools=spec.tools, approval=parent.policy.mode, events=child_events(parent.events, profile.name),
        on_token=None, child=spec)


def run_child(parent: SubagentParent, request: TaskRequest, profile: AgentProfile, *, child_id: str, depth: int,
              model: tuple[Any, str], cancel: threading.Event, approver: Callable[[list[ApprovalRequest]], Any],
              tree: Any) -> tuple[SubagentReport, str, bool]:
    """Open the child for ``request`` (:func:`open_child`), brief it (with the parent's task state),
    drive it to its report (:func:`drive_to_report`) and close it."""
    cfg = parent.settings.subagents
    child = open_child(parent, child_id=child_id, profile=profile, depth=depth, model=model[0], model_name=model[1],
                       tool_call_id=request.tool_call_id, description=request.description, cancel=cancel,
                       rules="rules" in request.context, tree=tree)
    try:
        memory = parent.session_memory
        brief = build_brief(request, workspace=child.parts.tool_context.workspace,
                            task_state=memory.load() if memory is not None else None,
                            files_max_tokens=cfg.files_max_tokens, task_state_max_tokens=cfg.task_state_max_tokens)
        return drive_to_report(child, brief, repair_attempts=cfg.repair_attempts, approver=approver)
    finally:
        child.close()


SHOWN_CHILD_EVENTS = (EventType.TOOL_STARTED, EventType.TOOL_FINISHED)


def child_events(parent: EventBus | None, agent: str) -> EventBus:
    """The child's own bus; its tool calls also reach the parent's, tagged ``subagent=agent``, so the
    user sees what a child runs as they see the parent's calls (the child's compactions stay its own)."""
    events = EventBus()
    if parent is not None:
        for kind in SHOWN_CHILD_EVENTS:
            events.subscribe(lambda event: parent.emit(event.type, **{**event.data, "subagent": agent}), kind)
    return events


def drive_to_report(child: Any, brief: Brief, *, repair_attempts: int,
                    approver: Callable[[list[ApprovalRequest]], Any]) -> tuple[SubagentReport, str, bool]:
    """Run the child on its brief; (report, status, repaired). One repair request for a bad answer.
    ``approver`` carries the child's questions to the user through the parent."""
    result = child.run_turn(str(brief.message.content), approver=approver, author="parent_model")
    if result.status == "interrupted":
        return unvalidated_report(result.reply or "stopped by Ctrl-C in the parent", "interrupted"), "interrupted", False
    if result.status == "max_steps":
        return unvalidated_report(f"stopped after {child.settings.agent.max_steps} model calls without a final "
                                  f"answer. {result.reply}".strip(), "partial"), "finished", False
    report, problem = parse_report(result.reply)
    attempts = 0
    while report is None and attempts < repair_attempts:
        attempts += 1
        again = child.run_turn(repair_request(str(problem)), approver=approver)
        if again.status == "interrupted":
            return unvalidated_report(result.reply, "interrupted"), "interrupted", False
        report, problem = parse_report(again.reply)
        if report is not None:
            return report, "finished", True
    if report is None:
        return unvalidated_report(result.reply), "finished", attempts > 0
    return report, "finished", False
