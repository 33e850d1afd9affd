"""Helpers for tool tests: a workspace with default tools and a way to call them like ToolNode does."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage

from mtagent.config import Settings
from mtagent.session.artifacts import ArtifactStore
from mtagent.tools import ToolContext, ToolSession, default_tools
from mtagent.tools.registry import tool_context

Call = Callable[..., ToolMessage]


class Kit:
    def __init__(self, root: Path, settings: Settings | None = None, **session: Any) -> None:
        self.root = root
        self.sink: list[dict[str, Any]] = []
        self.artifacts = ArtifactStore(root.parent / f"{root.name}-artifacts")
        self.tools = {t.name: t for t in default_tools(
            root, ToolSession(artifacts=self.artifacts, sink=self.sink, **session), settings or Settings(),
            include_memory=False)}
        self.ctx: ToolContext = tool_context(list(self.tools.values()))
        self._ids = itertools.count(1)

    def call(self, name: str, **args: Any) -> ToolMessage:
        call_id = f"call_{next(self._ids)}"
        msg = self.tools[name].invoke({"name": name, "args": args, "id": call_id, "type": "tool_call"})
        assert isinstance(msg, ToolMessage)
        assert msg.tool_call_id == call_id and msg.name == name
        return msg


@pytest.fixture
def kit(tmp_path: Path) -> Kit:
    root = tmp_path / "ws"
    root.mkdir()
    return Kit(root)


@pytest.fixture
def make_kit(tmp_path: Path) -> Callable[..., Kit]:
    counter = itertools.count()

    def make(settings: Settings | None = None, **session: Any) -> Kit:
        root = tmp_path / f"ws{next(counter)}"
        root.mkdir()
        return Kit(root, settings, **session)

    return make
