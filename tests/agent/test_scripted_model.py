"""The scripted chat model: steps, policy, failures, tool binding, usage and streaming."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool

from mtagent.agent.scripted import ScriptedChatModel, ScriptExhausted, reply, tool_call, tool_calls
from mtagent.context.tokens import count_text_tokens


@tool
def ls(path: str) -> str:
    """List a directory."""
    return path


def test_steps_are_replayed_in_order_with_tool_calls():
    model = ScriptedChatModel([tool_call("ls", {"path": "."}, id="c1"), "done"]).bind_tools([ls])
    first = model.invoke("go")
    assert first.tool_calls == [{"name": "ls", "args": {"path": "."}, "id": "c1", "type": "tool_call"}]
    assert model.invoke("next").content == "done"


def test_bind_tools_records_the_tool_names():
    model = ScriptedChatModel(["x"])
    model.bind_tools([ls])
    assert model.bound_tool_names == ["ls"]


def test_usage_metadata_counts_what_was_sent():
    model = ScriptedChatModel([reply("fine")])
    text = "a fairly long question about tokens " * 20
    message = model.invoke([HumanMessage(content=text)])
    assert message.usage_metadata["input_tokens"] == count_text_tokens(text) + 4
    assert message.usage_metadata["output_tokens"] == count_text_tokens("fine")


def test_a_policy_answers_after_the_steps_and_sees_the_messages():
    seen = []

    def policy(messages):
        seen.append(len(messages))
        return "from policy"

    model = ScriptedChatModel(["scripted"], policy=policy)
    assert model.invoke("a").content == "scripted"
    assert model.invoke([HumanMessage("a"), HumanMessage("b")]).content == "from policy"
    assert seen == [2]
    assert len(model.calls) == 2


def test_exception_steps_are_raised_and_exhaustion_is_an_error():
    model = ScriptedChatModel([ValueError("provider down")])
    with pytest.raises(ValueError, match="provider down"):
        model.invoke("x")
    with pytest.raises(ScriptExhausted):
        model.invoke("y")


def test_streaming_yields_text_chunks_then_tool_calls_and_usage():
    model = ScriptedChatModel([tool_calls(("ls", {"path": "a"}), ("ls", {"path": "b"}),
                                          content="looking at two folders now")], stream_chunk_chars=5)
    chunks = list(model.bind_tools([ls]).stream("go"))
    assert len(chunks) > 3
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    assert total.content == "looking at two folders now"
    assert [c["args"] for c in total.tool_calls] == [{"path": "a"}, {"path": "b"}]
    assert total.usage_metadata["input_tokens"] > 0
