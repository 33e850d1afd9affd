"""Fixtures: a project folder and a real ``create_agent`` graph around a scripted model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain.agents import create_agent
from lc_harness import SYSTEM_PROMPT, TOOLS

from mtagent.agent.scripted import ScriptedChatModel


@pytest.fixture
def build_agent() -> Callable[..., Any]:
    def build(model: ScriptedChatModel, middleware: list[Any], checkpointer: Any) -> Any:
        return create_agent(model, TOOLS, system_prompt=SYSTEM_PROMPT, middleware=middleware,
                            checkpointer=checkpointer)

    return build
