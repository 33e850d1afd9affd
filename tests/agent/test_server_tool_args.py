"""Tool arguments from small local models: raw control characters inside strings are read as
meant; ambiguous arguments are refused with a message the model can act on (hostile inputs)."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.messages.tool import tool_call_chunk

from mtagent.agent.graph import _strict_streamed_calls
from mtagent.agent.tool_args import ToolArgsError, parse_tool_arguments

RAW_NEWLINE = '{"path": "calc.py", "text": "def f():\n\treturn 1\n"}'


def test_raw_newlines_and_tabs_inside_strings_are_accepted() -> None:
    assert parse_tool_arguments(RAW_NEWLINE) == {"path": "calc.py", "text": "def f():\n\treturn 1\n"}
    assert parse_tool_arguments("  ") == {}


@pytest.mark.parametrize(("text", "says"), [
    ('{"path": "a", "path": "b"}', "appears twice"),
    ('{"n": NaN}', "not a JSON value"),
    ('{"path": "a"} {"path": "b"}', "Extra data"),
    ('["a.py"]', "JSON object"),
    ('"a.py"', "JSON object"),
    ('{"path": "a.py"', "cut off"),
    ("{'path': 'a.py'}", "not valid JSON"),
])
def test_ambiguous_arguments_are_refused_with_a_fix(text: str, says: str) -> None:
    with pytest.raises(ToolArgsError, match=says) as info:
        parse_tool_arguments(text)
    assert "send" in str(info.value) or "must be" in str(info.value)


def _streamed(args: str) -> AIMessage:
    acc = AIMessageChunk(content="", tool_call_chunks=[tool_call_chunk(name="write_file", args=args, id="c1", index=0)])
    message = AIMessage(content="", tool_calls=acc.tool_calls, invalid_tool_calls=acc.invalid_tool_calls)
    return _strict_streamed_calls(message, acc)


def test_a_streamed_call_with_a_raw_newline_runs_and_a_duplicate_key_does_not() -> None:
    assert _streamed(RAW_NEWLINE).tool_calls[0]["args"]["text"].startswith("def f():\n")
    bad = _streamed('{"path": "a", "path": "b"}')
    assert not bad.tool_calls and "appears twice" in bad.invalid_tool_calls[0]["error"]
