"""What every mtagent tool shares: the session context, error handling and the budget.

A tool is a LangChain ``BaseTool`` with a precise pydantic args schema. Its :meth:`execute`
returns ``(content, tool_use_result)`` or raises :class:`ToolInputError` (or any
:class:`~mtagent.errors.MTAgentError`/``OSError``) with a message the model can act on.
:class:`WorkspaceTool` turns that into a ``ToolMessage`` — ``status="error"`` for failures,
never an exception through the agent loop — and passes every result through the session's
:class:`~mtagent.context.tool_results.budgeter.ToolResultBudgeter` the moment it is produced.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, ToolException
from pydantic import ConfigDict, Field, SkipValidation, ValidationError

from mtagent.config import Settings
from mtagent.context.tool_results.budgeter import RecordSink, ToolResultBudgeter, ToolResultPolicy, window_max_chars
from mtagent.errors import MTAgentError
from mtagent.events import EventBus, SessionStats
from mtagent.session.artifacts import ArtifactStore
from mtagent.tools.read_state import ReadState
from mtagent.tools.workspace import Workspace


class ToolInputError(Exception):
    """A tool cannot do what was asked; the message tells the model what to do instead."""


@dataclass(slots=True)
class ToolSession:
    """The parts of a running session tools write to (all optional)."""

    artifacts: ArtifactStore | None = None
    sink: RecordSink | None = None
    events: EventBus | None = None
    stats: SessionStats | None = None


@dataclass(slots=True)
class ToolContext:
    """Everything a tool needs, built once per session and shared by all its tools."""

    workspace: Workspace
    settings: Settings
    budgeter: ToolResultBudgeter
    read_state: ReadState = field(default_factory=ReadState)
    artifacts: ArtifactStore | None = None
    events: EventBus | None = None

    @classmethod
    def create(cls, workspace_root: Any, session: ToolSession | None = None,
               settings: Settings | None = None, *, read_state: ReadState | None = None) -> ToolContext:
        settings = settings or Settings()
        session = session or ToolSession()
        workspace = Workspace.create(workspace_root, settings.agent.workspace_extra_roots)
        budgeter = ToolResultBudgeter(
            policy=ToolResultPolicy.from_settings(settings.tool_results, window_chars=window_max_chars(settings)),
            artifacts=session.artifacts, sink=session.sink, events=session.events, stats=session.stats,
        )
        state = read_state or ReadState()
        if session.events is not None:
            state.follow(session.events)
        return cls(workspace, settings, budgeter, state, session.artifacts, session.events)


def _validation_message(exc: ValidationError) -> str:
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        problems.append(f"{where}: {err['msg']}")
    return "Invalid arguments — " + "; ".join(problems) + ". Fix them and call the tool again."


class WorkspaceTool(BaseTool):
    """Base of the workspace tools: error → ToolMessage, result → budgeter."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    context: SkipValidation[ToolContext] = Field(exclude=True)
    response_format: str = "content_and_artifact"
    handle_tool_error: bool = True
    handle_validation_error: Any = _validation_message

    def execute(self, call_id: str, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        raise NotImplementedError

    def _run(self, *args: Any, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        call_id = kwargs.pop("_call_id", None) or f"{self.name}-{uuid.uuid4().hex[:12]}"
        kwargs.pop("run_manager", None)
        if args:  # a plain string input fills the schema's first field (LangChain convention)
            kwargs[next(iter(self.args_schema.model_fields))] = args[0]
        try:
            return self.execute(call_id, **kwargs)
        except (ToolInputError, MTAgentError) as exc:
            raise ToolException(f"Error: {exc}") from exc
        except OSError as exc:
            where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
            raise ToolException(f"Error: {exc.strerror or exc}{where}") from exc
        except Exception as exc:  # a tool must never raise through the agent loop
            raise ToolException(f"Error: {self.name} failed unexpectedly: {type(exc).__name__}: {exc}") from exc

    def _to_args_and_kwargs(self, tool_input: Any, tool_call_id: str | None) -> tuple[tuple, dict]:
        args, kwargs = super()._to_args_and_kwargs(tool_input, tool_call_id)
        kwargs["_call_id"] = tool_call_id
        return args, kwargs

    def run(self, tool_input: Any, *args: Any, tool_call_id: str | None = None, **kwargs: Any) -> Any:
        call_id = tool_call_id or f"{self.name}-{uuid.uuid4().hex[:12]}"
        output = super().run(tool_input, *args, tool_call_id=call_id, **kwargs)
        return self._finish(output, given=tool_call_id is not None)

    async def arun(self, tool_input: Any, *args: Any, tool_call_id: str | None = None, **kwargs: Any) -> Any:
        call_id = tool_call_id or f"{self.name}-{uuid.uuid4().hex[:12]}"
        output = await super().arun(tool_input, *args, tool_call_id=call_id, **kwargs)
        return self._finish(output, given=tool_call_id is not None)

    def _finish(self, output: Any, *, given: bool) -> Any:
        if not isinstance(output, ToolMessage):
            return output
        if output.status == "error" and output.artifact is None:
            output.artifact = {"kind": "error"}
        message = self.context.budgeter.budget(output)
        self.context.read_state.bind_message(message.tool_call_id, message.id)
        return message if given else message.content
