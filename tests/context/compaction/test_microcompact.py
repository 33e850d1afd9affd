from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from mtagent.config import MicrocompactSettings
from mtagent.context.invariants import validate_view
from mtagent.context.compaction.microcompact import (
    CLEARED_PLACEHOLDER,
    is_cleared,
    maybe_size_based_microcompact,
    maybe_time_based_microcompact,
)

HOUR = 3600.0


def rounds(n: int, tool: str = "read_file", size: int = 400) -> list[BaseMessage]:
    msgs: list[BaseMessage] = [HumanMessage("go", id="h")]
    for i in range(n):
        call = {"id": f"c{i}", "name": tool, "args": {"file_path": f"src/m{i}.py"}}
        msgs.append(AIMessage(f"step {i}", id=f"a{i}", tool_calls=[call]))
        msgs.append(ToolMessage("data " * size, tool_call_id=f"c{i}", name=tool, id=f"t{i}"))
    return msgs


def tokens(m: BaseMessage) -> int:
    return len(str(m.content)) // 4 + 4


def test_no_clearing_within_the_gap():
    msgs = rounds(10)
    result = maybe_time_based_microcompact(msgs, now=1000 + 59 * 60, last_assistant_ts=1000)
    assert not result.cleared_ids and result.messages == msgs


def test_after_sixty_minutes_old_results_are_cleared_and_last_five_kept():
    msgs = rounds(10)
    result = maybe_time_based_microcompact(msgs, now=1000 + HOUR + 1, last_assistant_ts=1000)
    assert result.trigger == "time"
    assert result.cleared_ids == [f"t{i}" for i in range(5)]
    by_id = {m.id: m for m in result.messages}
    for i in range(5):
        assert by_id[f"t{i}"].content == CLEARED_PLACEHOLDER
        assert by_id[f"t{i}"].response_metadata["mtagent"]["cleared"] == "time"
    for i in range(5, 10):
        assert by_id[f"t{i}"].content.startswith("data")
    validate_view(result.messages)


def test_clearing_never_touches_the_originals():
    msgs = rounds(8)
    before = [m.content for m in msgs]
    maybe_time_based_microcompact(msgs, now=10 * HOUR, last_assistant_ts=0)
    assert [m.content for m in msgs] == before
    assert not any(is_cleared(m) for m in msgs)


def test_time_clearing_is_idempotent():
    msgs = rounds(8)
    first = maybe_time_based_microcompact(msgs, now=10 * HOUR, last_assistant_ts=0)
    second = maybe_time_based_microcompact(first.messages, now=20 * HOUR, last_assistant_ts=0,
                                           already_cleared=first.cleared_ids)
    assert not second.cleared_ids
    assert [m.content for m in second.messages] == [m.content for m in first.messages]


def test_only_compactable_tools_are_cleared():
    msgs = rounds(8, tool="save_memory")
    assert not maybe_time_based_microcompact(msgs, now=10 * HOUR, last_assistant_ts=0).cleared_ids


def test_size_clearing_fires_above_trigger_and_stops_at_target():
    msgs = rounds(30)
    total = sum(tokens(m) for m in msgs)
    settings = MicrocompactSettings(size_trigger_fraction=0.5, size_target_fraction=0.25)
    window = int(total / 0.6)
    result = maybe_size_based_microcompact(msgs, total, window, token_of=tokens, settings=settings)
    assert result.trigger == "size" and result.cleared_ids
    after = sum(tokens(m) for m in result.messages)
    assert after <= window * 0.25 or len(result.cleared_ids) == 30 - settings.keep_recent
    assert total - after == result.tokens_saved
    # oldest first, one batch
    assert result.cleared_ids == [f"t{i}" for i in range(len(result.cleared_ids))]
    quiet = maybe_size_based_microcompact(msgs, total, total * 3, token_of=tokens, settings=settings)
    assert not quiet.cleared_ids


def test_size_clearing_keeps_results_the_model_referred_to_later():
    msgs = rounds(20)
    msgs.append(AIMessage("As seen in src/m0.py:12 the parser recurses; also call c1 matters.", id="late"))
    total = sum(tokens(m) for m in msgs)
    result = maybe_size_based_microcompact(msgs, total, total, token_of=tokens,
                                           settings=MicrocompactSettings(size_trigger_fraction=0.5,
                                                                         size_target_fraction=0.01))
    assert "t0" not in result.cleared_ids and "t1" not in result.cleared_ids
    assert "t2" in result.cleared_ids
    assert not {f"t{i}" for i in range(15, 20)} & set(result.cleared_ids)


def test_a_cleared_result_keeps_its_last_error_lines_and_nothing_else():
    from langchain_core.messages import ToolMessage

    from mtagent.context.compaction.microcompact import CLEARED_PLACEHOLDER, cleared_copy, cleared_content

    log = "\n".join(["compiling kernel.c"] * 500 + ["kernel.c:42: error: 'tmp' undeclared",
                                                      "make: *** [all] Error 1", "done"])
    cleared = cleared_copy(ToolMessage(log, tool_call_id="c1", id="t1", name="shell"), "size")
    assert cleared.content.startswith(CLEARED_PLACEHOLDER)
    assert "kernel.c:42: error: 'tmp' undeclared" in cleared.content and "make: *** [all] Error 1" in cleared.content
    assert "compiling kernel.c" not in cleared.content
    assert cleared_content("all 12 tests passed") == CLEARED_PLACEHOLDER
    assert cleared_content(log) == cleared.content  # deterministic: resume rebuilds the same bytes
