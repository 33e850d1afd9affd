"""Tests that kill view-validation mutants that survived (see docs/mutation.md)."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from mtagent.context.invariants import InvalidView, validate_view


def _ai(i: int, calls: int, rid: str | None = None) -> AIMessage:
    msg = AIMessage(f"step {i}", id=f"a{i}",
                    tool_calls=[{"id": f"c{i}-{k}", "name": "read_file", "args": {}} for k in range(calls)])
    if rid:
        msg.response_metadata = {"id": rid}
    return msg


def _result(i: int, k: int = 0) -> ToolMessage:
    return ToolMessage("ok", tool_call_id=f"c{i}-{k}", name="read_file", id=f"t{i}-{k}")


def test_an_unanswered_call_is_named_by_its_own_id():
    view = [HumanMessage("go", id="h"), _ai(1, 2), _result(1, 1), HumanMessage("next", id="h2")]
    with pytest.raises(InvalidView, match="'c1-0' has no result before message 3"):
        validate_view(view)


def test_chunks_of_one_provider_response_may_come_before_their_results():
    validate_view([HumanMessage("go", id="h"), _ai(1, 1, rid="r"), _ai(2, 1, rid="r"), _result(1), _result(2)])
    with pytest.raises(InvalidView, match="has no result"):
        validate_view([HumanMessage("go", id="h"), _ai(1, 1, rid="r"), _ai(2, 1, rid="other"), _result(1),
                       _result(2)])
