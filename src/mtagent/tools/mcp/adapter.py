"""An MCP server's tool as a LangChain ``BaseTool`` named ``mcp__<server>__<tool>``.

The tool's schema is the server's input schema (cleaned); calling it hands the arguments to the
session's :class:`~mtagent.tools.mcp.manager.McpManager`, which starts or restarts the server as
needed. A failure — the server is down, hung, crashed, or answered with an error — is an error
result the model can read (``status="error"``), never an exception through the agent loop. The
result goes back as ``(content, tool_use_result)``; the agent's tool node then passes it through
the engine like every built-in tool's result: redaction, the tool-result budget (artifact and
preview), at-most-once bookkeeping and the transcript the recall index reads.
"""

from __future__ import annotations

from typing import Any, Protocol

from langchain_core.tools import BaseTool, ToolException
from pydantic import ConfigDict, Field, SkipValidation

from mtagent.tools.mcp.render import render_result
from mtagent.tools.mcp.errors import McpServerError

SOURCE_PREFIX = "mcp:"
_WHOLE = "_mcp_arguments"  # the call's arguments, passed whole to _run


class CallsMcp(Protocol):
    def call(self, server: str, tool: str, arguments: dict[str, Any]) -> Any: ...


class McpTool(BaseTool):
    """One tool of one MCP server (see the module docstring)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    server: str
    remote_name: str
    caller: SkipValidation[CallsMcp] = Field(exclude=True)
    response_format: str = "content_and_artifact"
    handle_tool_error: bool = True

    @property
    def source(self) -> str:
        """``mcp:<server>`` — the catalog's label for where this tool comes from."""
        return SOURCE_PREFIX + self.server

    def _run(self, *args: Any, run_manager: Any = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        arguments = kwargs.pop(_WHOLE, None)
        if not isinstance(arguments, dict):
            arguments = dict(args[0]) if args and isinstance(args[0], dict) else dict(kwargs)
        try:
            result = self.caller.call(self.server, self.remote_name, arguments)
        except McpServerError as exc:
            raise ToolException(f"Error: {exc}") from exc
        content, meta = render_result(result, server=self.server, tool=self.remote_name)
        if meta["is_error"]:
            raise ToolException(f"Error: the MCP tool {self.remote_name} of server '{self.server}' reported a "
                                f"failure:\n{content}")
        return content, meta

    def _to_args_and_kwargs(self, tool_input: Any, tool_call_id: str | None) -> tuple[tuple, dict]:
        """Arguments go through whole: the server's schema may name any parameter (even ``args``)."""
        if isinstance(tool_input, dict):
            return (), {_WHOLE: dict(tool_input)}
        return super()._to_args_and_kwargs(tool_input, tool_call_id)
