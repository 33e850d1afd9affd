"""``--model scripted:FILE``: replay a written script instead of calling a provider.

A script is a JSON list; each element answers one model call, in order:

* ``"text"`` — a plain reply;
* ``{"tool": "shell", "args": {"command": "ls"}}`` — one tool call (optional ``"content"``);
* ``{"tool_calls": [{"tool": …, "args": …}, …], "content": "…"}`` — several at once.

It drives the real loop, tools, transcript and engine with no network and no key: for tests
(the CLI and the pseudo-terminal REPL test use it), for reproducing a bug report, and for
trying approvals. When the script runs out, the next call fails with a clear error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mtagent.errors import UsageError

if TYPE_CHECKING:  # the agent stack is imported only when a script is loaded (keeps `mtagent --help` quick)
    from langchain_core.messages import AIMessage

    from mtagent.agent.scripted import ScriptedChatModel

PREFIX = "scripted:"
CONTEXT_TEST = "context-test:"  # the context-sensitive model (agent/context_model.py) (no file): acts on what it is sent


def is_scripted(spec: str | None) -> bool:
    return bool(spec) and str(spec).startswith((PREFIX, CONTEXT_TEST))


def _step(item: Any, where: str) -> AIMessage | str:
    from mtagent.agent.scripted import tool_call, tool_calls

    if isinstance(item, str):
        return item
    if not isinstance(item, dict):
        raise UsageError(f"{where}: a step must be a string or an object with 'tool' or 'tool_calls'")
    content = str(item.get("content", ""))
    if "tool" in item:
        args = item.get("args", {})
        if not isinstance(args, dict):
            raise UsageError(f"{where}: 'args' must be an object")
        return tool_call(str(item["tool"]), args, content=content)
    if "tool_calls" in item:
        calls = item["tool_calls"]
        if not isinstance(calls, list) or not all(isinstance(c, dict) and "tool" in c for c in calls):
            raise UsageError(f"{where}: 'tool_calls' must be a list of {{'tool': …, 'args': …}}")
        return tool_calls(*((str(c["tool"]), dict(c.get("args") or {})) for c in calls), content=content)
    if "text" in item:
        return str(item["text"])
    raise UsageError(f"{where}: an object step needs 'tool', 'tool_calls' or 'text'")


def load_scripted_model(spec: str) -> ScriptedChatModel:
    """The model for ``scripted:FILE``; its name keeps the absolute path so a resume finds it."""
    from mtagent.agent.scripted import ScriptedChatModel

    if spec.startswith(CONTEXT_TEST):
        from mtagent.agent.context_model import ContextTestModel

        return ContextTestModel()
    raw = spec[len(PREFIX):]
    if not raw:
        raise UsageError("--model scripted: needs a file, e.g. --model scripted:script.json")
    path = Path(raw).expanduser().resolve()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"no such script file: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read script file {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"script file {path} is not valid JSON: {exc}") from None
    if not isinstance(data, list):
        raise UsageError(f"script file {path} must hold a JSON list of steps")
    steps = [_step(item, f"{path.name} step {i + 1}") for i, item in enumerate(data)]
    return ScriptedChatModel(steps, model_name=f"{PREFIX}{path}")
