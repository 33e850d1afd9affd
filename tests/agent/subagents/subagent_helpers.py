"""Helpers of the subagent tests: a project, report JSON, and sessions whose children are scripted."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mtagent.agent.scripted import ScriptedChatModel, tool_call
from mtagent.agent.session import AgentSession
from mtagent.config import Settings
from mtagent.session.reader import read_records


def make_code(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "auth.py").write_text("def login(user):\n    return redirect('/home')  # FACT: login redirects to /home\n")
    (root / "routes.py").write_text("ROUTES = {'/home': 'home_view'}  # FACT: /home maps to home_view\n")
    (root / "README.md").write_text("# demo project\n")
    return root


def report_json(summary: str = "found it", **extra: Any) -> str:
    return json.dumps({"outcome": "success", "summary": summary, **extra})


def task(prompt: str = "where is login?", agent: str = "explore", *, id: str | None = None,
         **extra: Any) -> Any:
    return tool_call("task", {"description": "find login", "prompt": prompt, "agent": agent, **extra}, id=id)


def settings(**subagents: Any) -> Settings:
    # sandbox off, as tests/conftest.py sets it for loaded settings: whether a shell call asks must not
    # depend on whether this machine can run bubblewrap (a sandboxed command asks no one)
    return Settings.model_validate({"subagents": subagents, "session_memory": {"enabled": True},
                                    "sandbox": {"mode": "off"}})


def open_session(root: Path, parent_steps: Sequence[Any], children: Callable[..., Any] | Sequence[Any], *,
                 cfg: Settings | None = None, approval: str = "auto") -> tuple[AgentSession, list[ScriptedChatModel]]:
    """A session whose model is scripted, and whose children get ``children``'s scripted models.

    ``children``: a list of step lists (one per child, in start order) or ``f(profile, request)``.
    """
    session = AgentSession.create(root, model=ScriptedChatModel(list(parent_steps)), settings=cfg or settings(),
                                  approval=approval)
    made: list[ScriptedChatModel] = []

    def factory(profile: Any, request: Any) -> tuple[Any, str]:
        steps = children(profile, request) if callable(children) else children[len(made)]
        model = steps if isinstance(steps, ScriptedChatModel) else ScriptedChatModel(list(steps))
        made.append(model)
        return model, "scripted:child"

    session.subagents.model_factory = factory
    return session, made


def subagent_records(path: Path) -> list[dict[str, Any]]:
    return [r for r in read_records(path) if r["type"] == "subagent"]
