"""The one error an MCP server's failure becomes (importable without the MCP SDK)."""

from __future__ import annotations

from mtagent.errors import MTAgentError


class McpServerError(MTAgentError):
    """A server could not start or answer; the message is for the model and the user."""
