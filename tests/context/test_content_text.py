"""One walk over message content (``context.tokens.content_text``); each reader says what a part that is
not text becomes — the same text as each reader's own helper gave before (issue 35). ``BaseMessage.text``
(langchain-core >= 1.0: a property) does not serve any of them: it joins text parts with nothing
between them and drops the rest."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from mtagent.cli.sessions_cmd import _content_text
from mtagent.context.recall.documents import text_of as recall_text
from mtagent.context.tokens import message_text
from mtagent.replay.trajectory import text_of as replay_text

IMAGE = {"type": "image", "source": {"data": "AAA"}}
TOOL_USE = {"type": "tool_use", "id": "t1", "name": "grep", "input": {"q": "x"}}
EMPTY_TEXT = {"type": "text", "text": ""}
REASONING = {"type": "reasoning", "text": "why"}
MIXED = ["lead", {"type": "text", "text": "first"}, IMAGE, TOOL_USE, EMPTY_TEXT, REASONING]


def dumped(block: dict) -> str:
    return json.dumps(block, ensure_ascii=False)


@pytest.mark.parametrize(("reader", "expected"), [
    (_content_text, f"lead\nfirst\n{dumped(IMAGE)}\n{dumped(TOOL_USE)}\n{dumped(EMPTY_TEXT)}\nwhy"),
    (replay_text, f"lead\nfirst\n[image]\n{dumped(TOOL_USE)}\n\nwhy"),
    (recall_text, "lead\nfirst\n\nwhy"),
])
def test_each_reader_keeps_its_own_text_of_text_image_and_tool_use_parts(reader, expected) -> None:
    assert reader([*MIXED, 7]) == expected  # a part that is neither str nor dict is left out
    assert reader([]) == reader("") == reader(None) == ""
    assert reader("plain") == "plain"


def test_a_prompt_counts_other_parts_as_json_and_tool_calls_once() -> None:
    message = AIMessage(content=MIXED, tool_calls=[{"name": "grep", "args": {"q": "x"}, "id": "t1"}])
    assert message_text(message) == f"lead\nfirst\n{dumped(IMAGE)}\n\n{dumped(REASONING)}\ngrep({{\"q\": \"x\"}})"
    assert message_text(HumanMessage(content=[])) == message_text(HumanMessage(content="")) == ""


def test_base_message_text_would_change_what_they_read() -> None:
    message = HumanMessage(content=MIXED)
    assert message.text == "leadfirst" and isinstance(message.text, str)  # a property, no newline, no image
