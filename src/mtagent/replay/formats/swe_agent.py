"""SWE-agent ``.traj`` (JSON) and the demo YAML → messages, from ``history`` (what the model saw).

* **Function-calling variant**: assistant messages carry OpenAI ``tool_calls``; observations are
  ``role: tool`` messages whose ``tool_call_ids`` is a list (the first id is the answer).
* **Text-action variant**: the action is in ``assistant.action`` and inside ``content``; the
  observation is the next ``user`` message. Like mini-swe-agent v1, actions become synthetic
  ``bash`` tool calls (``call_<step>``, ``{"command": action}``) whose assistant text is the
  ``thought``, and the observation becomes the call's tool result.

Demonstration messages (``is_demo``) are kept: they were in the prompt. ``trajectory``,
``info`` and ``replay_config`` are not model context.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from mtagent.errors import ReplayFormatError
from mtagent.replay.trajectory import Trajectory, ai, finish, human, parse_arguments, system, text_of, tool

FORMAT = "swe-agent"


def sniff(data: Any) -> bool:
    if not isinstance(data, dict) or not isinstance(data.get("history"), list):
        return False
    history = data["history"]
    return bool(history) and all(isinstance(m, dict) and "role" in m for m in history[:5]) and (
        "trajectory" in data or "environment" in data or any("agent" in m for m in history[:3])
    )


def parse(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix in (".yaml", ".yml"):
            import yaml

            return yaml.safe_load(text)
        return json.loads(text)
    except ValueError as exc:
        raise ReplayFormatError(f"{path} does not parse; expected a SWE-agent .traj (JSON) or demo YAML") from exc
    except Exception as exc:  # yaml.YAMLError does not derive from ValueError
        raise ReplayFormatError(f"{path} does not parse as YAML; expected a SWE-agent demo YAML") from exc


def load(path: Path, data: Any) -> list[Trajectory]:
    if not sniff(data):
        raise ReplayFormatError(f"{path} is not a SWE-agent trajectory (expected an object with a 'history' message list)")
    messages: list[BaseMessage] = []
    pending: str | None = None
    step = 0
    for i, m in enumerate(data["history"]):
        role = m.get("role")
        text = text_of(m.get("content"))
        mid = f"msg-{i}"
        if role == "system":
            messages.append(system(text, mid))
        elif role == "assistant":
            pending = None
            if m.get("tool_calls"):
                calls = [
                    {"id": c["id"], "name": c["function"]["name"], "args": parse_arguments(c["function"].get("arguments"))}
                    for c in m["tool_calls"]
                ]
                messages.append(ai(text, mid, calls))
            elif m.get("action") and str(m["action"]).strip():
                step += 1
                pending = f"call_{step}"
                thought = text_of(m.get("thought")) if m.get("thought") is not None else text
                messages.append(ai(thought, mid, [{"id": pending, "name": "bash", "args": {"command": str(m["action"]).strip()}}]))
            else:
                messages.append(ai(text, mid))
        elif role == "tool":
            ids = m.get("tool_call_ids") or [m.get("tool_call_id")]
            messages.append(tool(text, mid, str(ids[0]), None))
        elif role == "user" and pending is not None:
            messages.append(tool(text, mid, pending, "bash"))
            pending = None
        else:
            messages.append(human(text, mid))
    _name_results(messages)
    info = data.get("info") or {}
    meta = {"source": str(path), "exit_status": info.get("exit_status"), "model_stats": info.get("model_stats")}
    return [finish(messages, FORMAT, meta=meta)]


def _name_results(messages: list[BaseMessage]) -> None:
    names: dict[str, str] = {}
    for m in messages:
        for call in getattr(m, "tool_calls", None) or []:
            names[call["id"]] = call["name"]
        if m.type == "tool" and not getattr(m, "name", None):
            m.name = names.get(m.tool_call_id)  # type: ignore[attr-defined]
