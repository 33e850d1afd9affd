"""The ``task`` tool: hand a narrow piece of work to a subagent and get its report back.

The child (spec 003, Boundary) starts from a brief, not from the parent's history: the
``description`` and ``prompt`` plus the context items the parent names — ``rules`` (the
project's rules and memory), ``task_state`` (the parent's session notes) and ``files`` (named
files of the workspace). It has its own window, its own tools (``explore`` and ``review`` are
read-only) and returns a structured report, which is this tool's result.

The tool layer only describes the call; running a child is the agent's job, reached through
the :class:`SubagentLauncher` protocol, so tools never import the agent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Protocol

from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from pydantic import BaseModel, Field

TASK_TOOL = "task"
CONTEXT_ITEMS = ("rules", "task_state")

TASK_DESCRIPTION = (
    "Start a subagent with its own context window for a self-contained piece of work, e.g. searching "
    "the code base or reviewing a change. It sees only what you give it (description, prompt, the "
    "context items and files you name) — not this conversation — and answers with a short structured "
    "report (outcome, findings with evidence, files read/changed, open questions). Use it to keep long "
    "explorations out of your own context. agent: 'explore' (read-only search and reading), 'review' "
    "(read-only critique), 'general' (may edit and run commands under the same approvals as you), or a "
    "profile of .mtagent/agents/. Several task calls in one message run in parallel."
)


class TaskArgs(BaseModel):
    description: str = Field(description="3-8 words naming the task (shown to the user).", max_length=200)
    prompt: str = Field(description="The complete brief: what to find or do, constraints, what to report.")
    agent: str = Field("explore", description="'explore', 'review', 'general' or a profile name.")
    context: list[str] = Field(
        default_factory=list,
        description="Context items to hand over: 'rules' (project rules and memory), 'task_state' (your "
        "session notes).",
    )
    files: list[str] = Field(default_factory=list, description="Workspace files the child starts with.")
    tool_call_id: Annotated[str, InjectedToolCallId]


@dataclass(slots=True, frozen=True)
class TaskRequest:
    """One ``task`` call as the launcher receives it."""

    tool_call_id: str
    description: str
    prompt: str
    agent: str = "explore"
    context: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)


class SubagentLauncher(Protocol):
    """Runs a child for a request and returns the text of its report (the tool's result)."""

    def launch(self, request: TaskRequest) -> str: ...


def build_task_tool(launcher: SubagentLauncher, *, agents: list[str] | None = None) -> BaseTool:
    """A ``task`` tool that hands each call to ``launcher`` (the agent's subagent runner)."""

    def task(description: str, prompt: str, tool_call_id: str, agent: str = "explore",
             context: list[str] | None = None, files: list[str] | None = None) -> str:
        return launcher.launch(TaskRequest(tool_call_id=tool_call_id, description=description, prompt=prompt,
                                           agent=agent, context=tuple(context or ()), files=tuple(files or ())))

    described = TASK_DESCRIPTION
    if agents:
        described += f" Available agents: {', '.join(agents)}."
    return StructuredTool.from_function(func=task, name=TASK_TOOL, description=described, args_schema=TaskArgs,
                                        handle_tool_error=True)
