"""The middleware sends compact schemas of the caller's tools in a small window; the agent still runs them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from mtagent.agent.scripted import ScriptedChatModel, reply, tool_call
from mtagent.config import Settings
from mtagent.integrations.langchain import MTContextMiddleware

LONG = "Look a symbol up in the project's index. " + "It explains every corner of the lookup in detail. " * 120


@tool(description=LONG)
def lookup(symbol: str, exact: bool = False) -> str:
    return f"{symbol} is defined in src/{symbol}.py" + (" (exact)" if exact else "")


class RecordingModel(ScriptedChatModel):
    """Keeps the tool schemas each bind sent (what the provider would receive)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        bound = super().bind_tools(tools, **kwargs)
        self.__dict__.setdefault("sent_tools", []).append(bound.kwargs["tools"])
        return bound


def _run(project: Path, settings: Settings) -> tuple[RecordingModel, MTContextMiddleware, list[Any]]:
    model = RecordingModel([tool_call("lookup", {"symbol": "parse"}, id="c1"), reply("parse lives in src/parse.py")])
    middleware = MTContextMiddleware(settings=settings, project_root=project, artifact_tool=False)
    agent = create_agent(model, [lookup], system_prompt="Answer briefly.", middleware=[middleware],
                         checkpointer=InMemorySaver())
    result = agent.invoke({"messages": [HumanMessage("where is parse?")]}, {"configurable": {"thread_id": "t"}})
    middleware.close()
    return model, middleware, result["messages"]


def test_small_window_binds_compact_schemas_and_the_call_still_runs(tmp_path: Path) -> None:
    settings = Settings.model_validate({"context": {"token_limit": 4096}, "session_memory": {"enabled": False}})
    model, middleware, messages = _run(tmp_path, settings)
    choice = middleware.toolsets.last_schemas
    assert choice is not None and choice.mode == "compact" and choice.full_tokens > 0.3 * 4096
    assert choice.tokens < 0.3 * 4096 and not choice.dropped  # the caller's tools are never dropped
    sent = model.sent_tools[-1][0]["function"]
    assert sent["name"] == "lookup" and sent["description"] == "Look a symbol up in the project's index."
    assert sent["parameters"]["properties"] == {"symbol": {"type": "string"},  # compact: no docs, no defaults
                                                "exact": {"type": "boolean"}}
    answer = next(m for m in messages if isinstance(m, ToolMessage))
    assert answer.content == "parse is defined in src/parse.py"  # the real tool ran from the compact call
    assert messages[-1].content == "parse lives in src/parse.py"


def test_large_window_keeps_the_full_schemas(tmp_path: Path) -> None:
    settings = Settings.model_validate({"context": {"token_limit": 131072}, "session_memory": {"enabled": False}})
    model, middleware, _ = _run(tmp_path, settings)
    assert middleware.toolsets.last_schemas is not None and middleware.toolsets.last_schemas.mode == "full"
    assert model.sent_tools[-1][0]["function"]["description"] == LONG.strip()
