"""The middleware defers a create_agent's many tools behind tool_search; a found tool is bound from the
next request (appended) and runs through the agent's own ToolNode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.memory import InMemorySaver

from mtagent.agent.scripted import ScriptedChatModel, reply, tool_call
from mtagent.config import Settings
from mtagent.integrations.langchain import MTContextMiddleware


class RecordingModel(ScriptedChatModel):
    """Keeps the tool names and system prompt of each request (what the provider would receive)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        bound = super().bind_tools(tools, **kwargs)
        self.__dict__.setdefault("sent_tools", []).append([t["function"]["name"] for t in bound.kwargs["tools"]])
        return bound

    def _next_reply(self, messages: list, tools: list | None = None) -> Any:
        self.__dict__.setdefault("systems", []).append(str(messages[0].content) if messages else "")
        return super()._next_reply(messages, tools)


def city_tools(n: int) -> list[StructuredTool]:
    def make(i: int) -> StructuredTool:
        def weather(day: str) -> str:
            return f"sunny in city {i} on {day}"
        return StructuredTool.from_function(weather, name=f"weather_city_{i}",
                                            description=f"Weather forecast for city number {i} on a given day.")
    return [make(i) for i in range(n)]


def run(tmp_path: Path, settings: Settings) -> tuple[RecordingModel, list[Any]]:
    model = RecordingModel([tool_call("tool_search", {"query": "forecast city number 17", "k": 1}, id="s1"),
                            tool_call("weather_city_17", {"day": "monday"}, id="c1"), reply("sunny")])
    middleware = MTContextMiddleware(settings=settings, project_root=tmp_path, artifact_tool=False)
    agent = create_agent(model, city_tools(30), system_prompt="Answer briefly.", middleware=[middleware],
                         checkpointer=InMemorySaver())
    result = agent.invoke({"messages": [HumanMessage("weather in city 17 on monday?")]},
                          {"configurable": {"thread_id": "t"}})
    middleware.close()
    return model, result["messages"]


def test_deferred_tools_are_found_loaded_and_run(tmp_path: Path) -> None:
    settings = Settings.model_validate({"tools": {"defer": "always"}, "session_memory": {"enabled": False}})
    model, messages = run(tmp_path, settings)
    first, second = model.sent_tools[0], model.sent_tools[1]
    assert first == ["tool_search"]  # none of the caller's 30 tools is core
    assert second == ["tool_search", "weather_city_17"]  # appended after the load
    assert "<deferred-tools>" in model.systems[0] and "weather_city_3" in model.systems[0]
    assert model.systems[0].startswith("Answer briefly.")
    results = [m for m in messages if isinstance(m, ToolMessage)]
    assert results[0].content.startswith("Loaded 1 tool(s)") and results[1].content == "sunny in city 17 on monday"


@pytest.mark.parametrize("config, n", [({"tools": {"defer": "never"}}, 30), ({"context": {"token_limit": 4096}}, 5)],
                         ids=["never_sends_every_tool_and_no_tool_search", "few_tools_under_auto_are_not_deferred"])
def test_tools_not_deferred_are_all_sent_without_tool_search(tmp_path: Path, config: dict, n: int) -> None:
    settings = Settings.model_validate({**config, "session_memory": {"enabled": False}})
    model = RecordingModel([reply("hi")])
    middleware = MTContextMiddleware(settings=settings, project_root=tmp_path, artifact_tool=False)
    agent = create_agent(model, city_tools(n), middleware=[middleware], checkpointer=InMemorySaver())
    agent.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "t"}})
    middleware.close()
    assert sorted(model.sent_tools[0]) == sorted(f"weather_city_{i}" for i in range(n))  # tool_search not offered


def test_one_threads_compaction_brings_the_delta_to_that_thread_only(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from mtagent.integrations.engine import ThreadSessions
    from mtagent.integrations.tool_deferral import RequestToolsets

    settings = Settings.model_validate({"tools": {"defer": "always"}, "session_memory": {"enabled": False}})
    sessions = ThreadSessions(settings=settings, project_root=tmp_path)
    toolsets = RequestToolsets(sessions, settings)
    a, b = (SimpleNamespace(config={"configurable": {"thread_id": t}}) for t in ("a", "b"))
    tools = city_tools(12)
    ts_a, ts_b = toolsets.for_runtime(a, tools), toolsets.for_runtime(b, tools)
    ts_a.catalog.load(["weather_city_3"])
    sessions.get(a).stats.compactions += 1  # what the engine counts when thread a compacts
    assert toolsets.for_runtime(a, tools).context.compactions == 1
    assert toolsets.for_runtime(b, tools).context.compactions == 0
    sessions.close()


def test_a_deferred_tool_called_by_name_runs_and_is_loaded(tmp_path: Path) -> None:
    settings = Settings.model_validate({"tools": {"defer": "always"}, "session_memory": {"enabled": False}})
    model = RecordingModel([tool_call("weather_city_4", {"day": "friday"}, id="c1"), reply("sunny")])
    middleware = MTContextMiddleware(settings=settings, project_root=tmp_path, artifact_tool=False)
    agent = create_agent(model, city_tools(30), middleware=[middleware], checkpointer=InMemorySaver())
    result = agent.invoke({"messages": [HumanMessage("friday in city 4?")]}, {"configurable": {"thread_id": "t"}})
    middleware.close()
    assert next(m for m in result["messages"] if isinstance(m, ToolMessage)).content == "sunny in city 4 on friday"
    assert model.sent_tools[0] == ["tool_search"] and model.sent_tools[1] == ["tool_search", "weather_city_4"]
