"""The texts the agent itself writes into the conversation.

The system prompt and ``<session_context>`` are built by :mod:`mtagent.context.static.tiers`; what
lives here are the tool results the agent writes *instead of* running a tool — so the model
learns why, and what to do next, rather than retrying blindly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SHELL_TOOL = "shell"


def _what(tool: str, args: Mapping[str, Any]) -> str:
    command = args.get("command") if tool == SHELL_TOOL else None
    return f"shell command {command!r}" if command else f"{tool} call"


def denied_result(tool: str, args: Mapping[str, Any], why: str) -> str:
    return (
        f"Not run: the {_what(tool, args)} was denied ({why}). Nothing was executed. "
        "Do not retry the same call; choose another approach, or ask the user to allow it."
    )


def invalid_arguments_result(tool: str, raw: str, error: str | None = None) -> str:
    detail = f" ({error.splitlines()[0]})" if error else ""
    return (
        f"Not run: the arguments of this {tool} call are not valid JSON{detail}. "
        f"Received: {raw[:500]!r}. Call the tool again with a valid JSON object of arguments."
    )


def unknown_tool_result(tool: str, available: list[str]) -> str:
    return f"Not run: there is no tool named {tool!r}. Available tools: {', '.join(sorted(available))}."


def interrupted_result(tool: str, args: Mapping[str, Any]) -> str:
    return (
        f"Interrupted: the user stopped the {_what(tool, args)} before it finished (Ctrl-C). "
        "Its effects, if any, are partial; check the state before relying on it."
    )


def not_run_after_interrupt(tool: str, args: Mapping[str, Any]) -> str:
    return f"Not run: the turn was interrupted by the user before the {_what(tool, args)} started."


def tool_failed_result(tool: str, error: BaseException) -> str:
    return f"Error: {tool} failed: {type(error).__name__}: {error}"
