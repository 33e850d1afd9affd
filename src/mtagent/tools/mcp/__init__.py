"""MCP client: a session's MCP servers as tools (``mcp__<server>__<tool>``), on the official SDK.

Public names: :class:`McpManager` (one per session; the catalog's source of MCP tools),
:class:`McpServerStatus`, :func:`discover_servers` and
:class:`ServerSpec` (what is configured, trusted or not — no process started), and
:class:`McpServerError`. The SDK (extra ``[mcp]``) is imported only when a server starts.
"""

from mtagent.tools.mcp.errors import McpServerError
from mtagent.tools.mcp.manager import McpManager, McpServerStatus
from mtagent.tools.mcp.specs import ServerSpec, discover_servers, project_server_lines
from mtagent.tools.mcp.untrusted import TOOL_PREFIX, quoted_instructions

__all__ = [
    "McpManager", "McpServerError", "McpServerStatus", "ServerSpec", "TOOL_PREFIX",
    "discover_servers", "project_server_lines", "quoted_instructions",
]
