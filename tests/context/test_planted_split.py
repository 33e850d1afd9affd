"""The safe split bounds the kept tail by its running total, not group by group.

A planted bug compared each API-round group with ``max_tokens`` on its own: a small newest group
before a large older one then kept a tail over ``compression_preserve_max_tokens``.
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from mtagent.context.invariants import find_safe_split_index

SIZES = {"h": 5, "a1": 5, "t1": 85, "a2": 5, "t2": 25}


def _round(i: int) -> list[BaseMessage]:
    call = {"id": f"c{i}", "name": "read_file", "args": {"file_path": f"f{i}"}}
    return [AIMessage(f"step {i}", id=f"a{i}", tool_calls=[call]),
            ToolMessage("body", tool_call_id=f"c{i}", name="read_file", id=f"t{i}")]


def _size(message: BaseMessage) -> int:
    return SIZES[str(message.id)]


def test_a_small_newest_round_before_a_large_older_one_keeps_only_the_newest():
    msgs = [HumanMessage("go", id="h"), *_round(1), *_round(2)]  # round sizes: old 90, new 30
    cut = find_safe_split_index(msgs, token_of=_size, min_tokens=1_000, max_tokens=100)
    assert cut == 3  # both rounds together (120) exceed the maximum: only the newest is kept
    assert sum(_size(m) for m in msgs[cut:]) <= 100


def test_the_kept_tail_never_exceeds_the_maximum_whatever_the_min():
    msgs = [HumanMessage("go", id="h"), *_round(1), *_round(2)]
    for max_tokens in range(30, 130, 5):
        cut = find_safe_split_index(msgs, token_of=_size, min_tokens=10_000, max_tokens=max_tokens)
        assert sum(_size(m) for m in msgs[cut:]) <= max_tokens, max_tokens
