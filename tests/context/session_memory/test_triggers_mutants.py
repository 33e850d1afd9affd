"""Which messages count as conversation text for the session-memory triggers (mutants that survived)."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from mtagent.context.boundary import summary_message
from mtagent.context.session_memory.triggers import is_text_message


def test_only_user_and_assistant_text_counts():
    assert is_text_message(HumanMessage("fix the parser"))
    assert not is_text_message(HumanMessage("   "))
    assert not is_text_message(ToolMessage("42 lines of output", tool_call_id="c1"))
    assert not is_text_message(summary_message("b1", "earlier work", pre_tokens=1, post_tokens=1, reason="auto"))


def test_block_content_counts_when_a_block_has_text():
    assert is_text_message(AIMessage(content=[{"type": "text", "text": "done"}]))
    assert is_text_message(AIMessage(content=["plain string block"]))
    assert not is_text_message(AIMessage(content=[{"type": "text", "text": "  "}, " "]))
    assert not is_text_message(AIMessage(content=[{"type": "tool_use", "id": "c1", "name": "x", "input": {}}]))
