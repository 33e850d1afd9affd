"""``read_tool_result`` for LangChain agents: the tool a ``<persisted-output>`` preview points to.

A persisted result's preview tells the model to page through the full text with
``read_tool_result(path=…, offset=…, limit=…)``. An agent built with ``create_agent`` has only
its own tools, so the middleware registers this one (``AgentMiddleware.tools``). It finds the
calling thread's session from the injected tool runtime and delegates to mtagent's own
:class:`~mtagent.tools.files.ReadToolResultTool`, so paging, line numbers, token limits and path
safety are exactly the CLI's.

(No ``from __future__ import annotations``: LangChain reads this tool's signature at run time
to build its schema and to inject the ``ToolRuntime``.)
"""

import threading
import uuid
from typing import Annotated, Any

from langchain.tools import ToolRuntime
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import Field

from mtagent.errors import MTAgentError
from mtagent.integrations.engine import ThreadSessions
from mtagent.tools.base import ToolContext, ToolInputError, ToolSession
from mtagent.tools.files import ReadToolResultArgs, ReadToolResultTool

TOOL_NAME = "read_tool_result"
_ARGS = ReadToolResultArgs.model_fields  # one wording of the arguments, shared with the CLI's tool


class _Readers:
    """One :class:`ReadToolResultTool` per session, built on first use."""

    def __init__(self, sessions: ThreadSessions) -> None:
        self.sessions = sessions
        self._tools: dict[str, ReadToolResultTool] = {}
        self._lock = threading.Lock()

    def for_runtime(self, runtime: Any) -> ReadToolResultTool:
        session = self.sessions.get(runtime)
        with self._lock:
            found = self._tools.get(session.session_id)
            if found is None:
                context = ToolContext.create(session.project_root, ToolSession(artifacts=session.artifacts),
                                             session.settings)
                found = self._tools[session.session_id] = ReadToolResultTool(context=context)
            return found


def make_read_tool_result(sessions: ThreadSessions) -> BaseTool:
    """The ``read_tool_result`` tool bound to an integration's sessions."""
    readers = _Readers(sessions)

    def read_tool_result(
        path: Annotated[str, Field(description=_ARGS["path"].description)],
        runtime: ToolRuntime,
        offset: Annotated[int, Field(ge=1, description=_ARGS["offset"].description)] = 1,
        limit: Annotated[int | None, Field(ge=1, description=_ARGS["limit"].description)] = None,
    ) -> str:
        reader = readers.for_runtime(runtime)
        call_id = runtime.tool_call_id or f"{TOOL_NAME}-{uuid.uuid4().hex[:12]}"
        try:
            text, _ = reader.execute(call_id, path=path, offset=offset, limit=limit)
        except (ToolInputError, MTAgentError) as exc:
            raise ToolException(f"Error: {exc}") from exc
        return text

    return StructuredTool.from_function(
        read_tool_result, name=TOOL_NAME, description=ReadToolResultTool.model_fields["description"].default,
        handle_tool_error=True,
    )
