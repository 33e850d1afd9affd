"""mini-swe-agent trajectories → messages.

* **v2** (``trajectory_format: "mini-swe-agent-1.1"``): an OpenAI chat list that already has
  tool calls. ``extra`` (raw provider response, raw output), ``function_call`` and
  ``provider_specific_fields`` are not model context and are dropped; the final ``exit``
  pseudo-message (the submitted patch) is not a chat role and is dropped too.
* **v1**: a bare list of ``{role, content}``; each assistant message holds one fenced
  ```` ```mswea_bash_command ```` (or ```` ```bash ````) block. Text actions become **synthetic
  tool calls** (``call_<step>``, ``bash`` with ``{"command": …}``) with the fenced block removed
  from the assistant text, and the following user message becomes that call's tool result. We
  chose this over "action in text, observation as a user message" so that every strategy that
  acts on tool results (masking, clearing, budgets) can act on these observations too; the
  token count differs from the original prompt only by the fence versus the JSON wrapping.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from mtagent.errors import ReplayFormatError
from mtagent.replay.trajectory import Trajectory, ai, finish, human, parse_arguments, system, text_of, tool

FORMAT_V1 = "mini-swe-agent-v1"
FORMAT_V2 = "mini-swe-agent"
_FENCE = re.compile(r"```(?:mswea_bash_command|bash|sh)?[ \t]*\n(.*?)\n?```", re.DOTALL)


def sniff_v2(data: Any) -> bool:
    return isinstance(data, dict) and "messages" in data and str(data.get("trajectory_format", "")).startswith(
        "mini-swe-agent"
    )


def sniff_v1(data: Any) -> bool:
    return (
        isinstance(data, list)
        and bool(data)
        and all(isinstance(m, dict) and "role" in m and "content" in m for m in data[:5])
        and any(m.get("role") == "assistant" and _FENCE.search(text_of(m.get("content"))) for m in data)
    )


def load_v2(path: Path, data: Any) -> list[Trajectory]:
    if not sniff_v2(data):
        raise ReplayFormatError(f"{path} is not a mini-swe-agent v2 trajectory (expected 'messages' and 'trajectory_format')")
    messages: list[BaseMessage] = []
    for i, m in enumerate(data["messages"]):
        if not isinstance(m, dict) or "role" not in m:
            raise ReplayFormatError(f"{path}: messages[{i}] has no 'role'; expected a mini-swe-agent v2 chat message")
        role = m["role"]
        ts = (m.get("extra") or {}).get("timestamp")
        text = text_of(m.get("content"))
        mid = f"msg-{i}"
        if role == "system":
            messages.append(system(text, mid, ts))
        elif role == "user":
            messages.append(human(text, mid, ts))
        elif role == "assistant":
            calls = [
                {"id": c.get("id") or f"{mid}-call-{k}", "name": str(c["function"].get("name") or "tool"),
                 "args": parse_arguments(c["function"].get("arguments"))}
                for k, c in enumerate(m.get("tool_calls") or [])
                if isinstance(c, dict) and isinstance(c.get("function"), dict)  # a malformed call is skipped
            ]
            messages.append(ai(text, mid, calls, ts))
        elif role == "tool":
            messages.append(tool(text, mid, str(m.get("tool_call_id")), "bash", timestamp=ts))
    info = data.get("info") or {}
    meta = {"source": str(path), "instance_id": data.get("instance_id"), "exit_status": info.get("exit_status")}
    return [finish(messages, FORMAT_V2, meta=meta)]


def load_v1(path: Path, data: Any) -> list[Trajectory]:
    if not isinstance(data, list) or not all(isinstance(m, dict) and "role" in m for m in data):
        raise ReplayFormatError(f"{path} is not a mini-swe-agent v1 trajectory (expected a JSON list of {{role, content}})")
    messages: list[BaseMessage] = []
    pending: str | None = None
    step = 0
    for i, m in enumerate(data):
        role = m["role"]
        text = text_of(m.get("content"))
        mid = f"msg-{i}"
        if role == "system":
            messages.append(system(text, mid))
        elif role == "assistant":
            match = _FENCE.search(text)
            if match:
                step += 1
                pending = f"call_{step}"
                thought = (text[: match.start()] + text[match.end():]).strip()
                messages.append(ai(thought, mid, [{"id": pending, "name": "bash", "args": {"command": match.group(1)}}]))
            else:
                pending = None
                messages.append(ai(text, mid))
        elif role == "user" and pending is not None:
            messages.append(tool(text, mid, pending, "bash"))
            pending = None
        else:
            messages.append(human(text, mid))
    return [finish(messages, FORMAT_V1, meta={"source": str(path)})]

