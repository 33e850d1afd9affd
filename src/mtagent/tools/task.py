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

from dataclasses import dataclass
from typing import Annotated, Protocol

from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from pydantic import BaseModel, Field

TASK_TOOL = "task"
CONTEXT_ITEMS = ("rules", "task_state")

TASK_DESCRIPTION = (
    "Run a subagent in its own context window on a self-contained task (search, reading, review); "
    "it sees only what you pass, not this conversation, and returns a short JSON report with evidence. "
    "Keeps long explorations out of your context. Several calls in one message run in parallel."
)


class TaskArgs(BaseModel):
    description: str = Field(description="3-8 words naming the task.", max_length=200)
    prompt: str = Field(description="The complete brief: goal, constraints, what to report.")
    agent: str = Field("explore", description="explore / review (read-only), general (edits, shell), or a profile.")
    context: list[str] = Field(default_factory=list, description="Items to pass: 'rules', 'task_state'.")
    files: list[str] = Field(default_factory=list, description="Workspace files to pass.")
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
    extra = [a for a in agents or () if a not in ("explore", "review", "general")]
    if extra:
        described += f" Profiles: {', '.join(extra)}."
    return StructuredTool.from_function(func=task, name=TASK_TOOL, description=described, args_schema=TaskArgs,
                                        handle_tool_error=True)
