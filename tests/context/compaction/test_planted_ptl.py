"""The prompt-too-long retry drops ``ceil`` of 20% of the rounds, not ``floor``.

With 6 rounds, 20% is 1.2: two rounds go (a planted ``floor`` dropped one, so the retry could
fail again on the same overflow).
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage

from mtagent.context.compaction.compactor import truncate_head_for_ptl_retry


def _rounds(n: int) -> list[BaseMessage]:
    msgs: list[BaseMessage] = []
    for i in range(n):  # one API round each: an assistant reply without tool calls
        msgs.append(AIMessage(f"a{i}", id=f"a{i}"))
    return msgs


def _one(_: BaseMessage) -> int:
    return 1


def _dropped_rounds(n: int, fraction: float = 0.2) -> int:
    out = truncate_head_for_ptl_retry(_rounds(n), None, token_of=_one, min_drop_fraction=fraction)
    assert out is not None
    dropped, remaining = out
    assert dropped + remaining == _rounds(n)
    return len(dropped)


def test_six_rounds_drop_two():
    assert _dropped_rounds(6) == 2


def test_the_drop_is_the_ceiling_of_the_fraction():
    assert [_dropped_rounds(n) for n in (2, 5, 6, 10, 11)] == [1, 1, 2, 2, 3]


def test_a_token_gap_drops_enough_rounds_to_cover_it_but_leaves_one():
    msgs = _rounds(6)
    dropped, _ = truncate_head_for_ptl_retry(msgs, 4, token_of=_one, min_drop_fraction=0.2)
    assert len(dropped) == 4  # four 1-token rounds cover a 4-token gap (more than 20%)
    dropped, remaining = truncate_head_for_ptl_retry(msgs, 10_000, token_of=_one, min_drop_fraction=0.2)
    assert len(remaining) == 1  # never everything: one round stays to be summarized
