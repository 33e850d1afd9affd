"""MTContextHook in a hand-built LangGraph graph: context node → model node → ToolNode, with a checkpointer."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from lc_harness import SYSTEM_PROMPT, TOOLS, conversation, request_tokens, small_window_settings, tool_results

from mtagent import paths
from mtagent.agent.scripted import ScriptedChatModel, reply, tool_call
from mtagent.context.boundary import is_summary_message
from mtagent.context.invariants import validate_view
from mtagent.errors import ContextLengthExceeded
from mtagent.integrations.graph_hook import MTContextHook
from mtagent.session.reader import read_records


class State(MessagesState):
    llm_input_messages: list[AnyMessage]


def build_graph(model: ScriptedChatModel, hook: MTContextHook) -> Any:
    bound = model.bind_tools(TOOLS)

    def call_model(state: State) -> dict[str, Any]:
        sent = [SystemMessage(SYSTEM_PROMPT), *state["llm_input_messages"]]
        try:
            return {"messages": [bound.invoke(sent)]}
        except ContextLengthExceeded as exc:
            update = hook.reactive(exc)
            return {"messages": [*update["messages"], bound.invoke([SystemMessage(SYSTEM_PROMPT),
                                                                     *update["llm_input_messages"]])]}

    graph = StateGraph(State)
    graph.add_node("context", hook)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode(TOOLS, wrap_tool_call=hook.wrap_tool_call))
    graph.add_node("record", hook.record)
    graph.add_edge(START, "context")
    graph.add_edge("context", "model")
    graph.add_conditional_edges("model", tools_condition, {"tools": "tools", END: "record"})
    graph.add_edge("tools", "context")
    graph.add_edge("record", END)
    return graph.compile(checkpointer=InMemorySaver())


def script(steps: int) -> list:
    return [*(tool_call("shell", {"command": f"c{i}"}, id=f"call_{i:03d}") for i in range(steps)), reply("done")]


def test_hand_built_graph_compacts_state_and_sends_a_budgeted_view(project):
    settings = small_window_settings()
    model = ScriptedChatModel(script(24))
    hook = MTContextHook(settings=settings, project_root=project, system=SYSTEM_PROMPT, tools=TOOLS)
    out = build_graph(model, hook).invoke({"messages": [HumanMessage("go")]},
                                          {"configurable": {"thread_id": "graph"}, "recursion_limit": 200})
    hook.close()

    assert out["messages"][-1].content == "done"
    assert is_summary_message(out["messages"][0])
    for sent in model.calls:
        validate_view(sent)
        assert request_tokens(sent) <= settings.context.token_limit
    assert all(m.content.startswith("<persisted-output") for m in tool_results(out["messages"]))
    recs = read_records(paths.session_transcript_path(project, "graph"))
    assert any(r["type"] == "compact_boundary" for r in recs)
    texts = [r["content"] for r in recs if r["type"] == "transcript_message"]
    assert texts[0] == "go" and texts[-1] == "done"
    assert sum(r["type"] == "transcript_message" and r["role"] == "tool" for r in recs) == 24


def test_hand_built_graph_reactive_compact_retries_with_a_smaller_view(project):
    settings = small_window_settings(token_limit=200_000)
    model = ScriptedChatModel([*script(8)[:-1], ContextLengthExceeded("prompt is too long"), reply("fits")])
    hook = MTContextHook(settings=settings, project_root=project, system=SYSTEM_PROMPT, tools=TOOLS)
    out = build_graph(model, hook).invoke({"messages": [HumanMessage("go")]},
                                          {"configurable": {"thread_id": "graph-reactive"}})
    hook.close()

    assert len(conversation(model.calls[-1])) < len(conversation(model.calls[-2]))
    validate_view(model.calls[-1])
    assert is_summary_message(out["messages"][0]) and out["messages"][-1].content == "fits"
    recs = read_records(paths.session_transcript_path(project, "graph-reactive"))
    assert [r["trigger"] for r in recs if r["type"] == "compact_boundary"] == ["reactive"]
