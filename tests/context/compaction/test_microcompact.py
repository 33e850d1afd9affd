from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from mtagent.config import MicrocompactSettings
from mtagent.context.invariants import validate_view
from mtagent.context.compaction.microcompact import (
    CLEARED_PLACEHOLDER,
    KEPT_ERROR_LINE_CHARS,
    cleared_content,
    cleared_copy,
    compactable_results,
    is_cleared,
    maybe_size_based_microcompact,
    maybe_time_based_microcompact,
    referenced_later,
)

HOUR = 3600.0


def rounds(n: int, tool: str = "read_file", size: int = 400, prefix: str = "") -> list[BaseMessage]:
    msgs: list[BaseMessage] = [HumanMessage("go", id=f"{prefix}h")]
    for i in range(n):
        call = {"id": f"{prefix}c{i}", "name": tool, "args": {"file_path": f"src/{prefix}m{i}.py"}}
        msgs.append(AIMessage(f"step {i}", id=f"{prefix}a{i}", tool_calls=[call]))
        msgs.append(ToolMessage("data " * size, tool_call_id=f"{prefix}c{i}", name=tool, id=f"{prefix}t{i}"))
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


# ── sharp tests: each kills a mutant that survived the tests above (docs/mutation.md) ──


def cleared_ids_after_idle(msgs: list[BaseMessage], **settings) -> list[str]:
    return maybe_time_based_microcompact(msgs, now=10 * HOUR, last_assistant_ts=0,
                                         settings=MicrocompactSettings(**settings)).cleared_ids


# ── the cleared copy ─────────────────────────────────────────────────────────────────────


def test_is_cleared_reads_only_the_cleared_mark():
    plain = ToolMessage("x", tool_call_id="c", id="t")
    marked_other = ToolMessage("x", tool_call_id="c", id="t", response_metadata={"mtagent": {"tool_result": "inline"}})
    assert is_cleared(plain) is False
    assert is_cleared(marked_other) is False
    assert is_cleared(cleared_copy(marked_other, "time")) is True


def test_only_the_last_two_error_lines_are_kept_each_clipped():
    long_error = "error: " + "x" * 500
    log = f"Error: first\nok\nError: second\nok\n{long_error}\ndone"
    text = cleared_content(log)
    kept = text.split("\n")[2:]
    assert text.startswith(CLEARED_PLACEHOLDER + "\nIts last error lines:\n")
    assert kept == ["Error: second", long_error[:KEPT_ERROR_LINE_CHARS]]
    assert len(kept[1]) == 300


def test_error_lines_are_found_in_content_blocks_too():
    blocks = [{"type": "text", "text": "building\nfatal: not a git repository"}]
    assert cleared_content(blocks) == CLEARED_PLACEHOLDER + "\nIts last error lines:\nfatal: not a git repository"


def test_a_cleared_copy_keeps_the_other_marks_and_a_cleared_one_is_returned_as_is():
    msg = ToolMessage("data", tool_call_id="c", id="t", name="grep",
                      response_metadata={"model": "m", "mtagent": {"tool_result": "persisted"}})
    copy = cleared_copy(msg, "size")
    assert copy.response_metadata == {"model": "m", "mtagent": {"tool_result": "persisted", "cleared": "size"}}
    assert copy.content == CLEARED_PLACEHOLDER and msg.content == "data"
    assert cleared_copy(copy, "time") is copy


def test_compactable_results_skip_id_less_skipped_and_cleared_ones():
    msgs = rounds(4)
    msgs.append(ToolMessage("no id", tool_call_id="c9", name="read_file"))
    msgs[2] = cleared_copy(msgs[2], "time")  # t0
    assert compactable_results(msgs, {"read_file"}, skip={"t1"}) == [6, 8]


# ── time trigger ─────────────────────────────────────────────────────────────────────────


def test_the_gap_must_exceed_the_threshold_exactly():
    msgs = rounds(8)
    at = maybe_time_based_microcompact(msgs, now=1000 + HOUR, last_assistant_ts=1000)
    assert at.cleared_ids == [] and at.trigger is None
    past = maybe_time_based_microcompact(msgs, now=1000 + HOUR + 1, last_assistant_ts=1000)
    assert past.cleared_ids == ["t0", "t1", "t2"]
    assert maybe_time_based_microcompact(msgs, now=10 * HOUR, last_assistant_ts=None).cleared_ids == []
    short = maybe_time_based_microcompact(msgs, now=1000 + 601, last_assistant_ts=1000,
                                          settings=MicrocompactSettings(gap_threshold_minutes=10))
    assert short.cleared_ids == ["t0", "t1", "t2"]


def test_keep_recent_counts_exactly_and_zero_keeps_nothing():
    msgs = [*rounds(4), AIMessage("all read", id="a-end")]  # every round answered
    assert cleared_ids_after_idle(msgs, keep_recent=0) == ["t0", "t1", "t2", "t3"]
    assert cleared_ids_after_idle(msgs, keep_recent=1) == ["t0", "t1", "t2"]
    assert cleared_ids_after_idle(msgs, keep_recent=2) == ["t0", "t1"]


def test_zero_kept_still_keeps_the_round_the_model_has_not_answered():
    """The model has not seen t3 yet: clearing it would make it call the tool again (#38)."""
    assert cleared_ids_after_idle(rounds(4), keep_recent=0) == ["t0", "t1", "t2"]


def test_only_compactable_results_count_toward_the_kept_newest():
    msgs = rounds(4) + rounds(3, tool="save_memory", prefix="s")[1:]
    assert cleared_ids_after_idle(msgs, keep_recent=2) == ["t0", "t1"]


def test_nothing_to_clear_is_no_trigger():
    result = maybe_time_based_microcompact(rounds(3), now=10 * HOUR, last_assistant_ts=0)
    assert (result.cleared_ids, result.trigger) == ([], None)


# ── references ───────────────────────────────────────────────────────────────────────────


def test_a_tool_call_id_with_a_colon_is_recognised_when_mentioned_later():
    """Some providers (Kimi/Moonshot) name calls ``functions.<tool>:<n>``."""
    call = {"id": "functions.read_file:3", "name": "read_file", "args": {}}
    msgs = [AIMessage("", id="a", tool_calls=[call]),
            ToolMessage("data", tool_call_id="functions.read_file:3", name="read_file", id="t"),
            AIMessage("The result of functions.read_file:3 shows the bug.", id="late")]
    assert referenced_later(msgs, {}) == {"t"}


def test_only_a_later_assistant_message_protects_a_result():
    msgs = rounds(2)
    early = [AIMessage("I will read src/m1.py next", id="plan")] + msgs
    assert referenced_later(early, {"c1": "src/m1.py"}) == set()
    user = msgs + [HumanMessage("look at src/m1.py", id="u")]
    assert referenced_later(user, {"c1": "src/m1.py"}) == set()
    later = msgs + [AIMessage("src/m1.py, line 3, is wrong.", id="x")]
    assert referenced_later(later, {"c1": "src/m1.py"}) == {"t1"}
    dotted = msgs + [AIMessage("see ./src/m1.py:3", id="x")]
    assert referenced_later(dotted, {"c1": "src/m1.py"}) == {"t1"}
    plain_mention = msgs + [AIMessage("src/m1.py is the culprit", id="x")]
    assert referenced_later(plain_mention, {"c1": "./src/m1.py"}) == {"t1"}  # read as ./src/m1.py


def test_a_path_recorded_in_the_result_artifact_counts_as_a_reference():
    msgs = rounds(12, tool="grep")
    for i in range(12):  # grep calls carry no path in their args; the artifact names the file
        msgs[2 + 2 * i] = ToolMessage("hit " * 400, tool_call_id=f"c{i}", name="grep", id=f"t{i}",
                                      artifact={"path": f"docs/n{i}.md"})
        msgs[1 + 2 * i] = AIMessage(f"step {i}", id=f"a{i}", tool_calls=[{"id": f"c{i}", "name": "grep", "args": {}}])
    msgs.append(AIMessage("docs/n0.md has the answer", id="late"))
    total = sum(tokens(m) for m in msgs)
    result = maybe_size_based_microcompact(msgs, total, total, token_of=tokens,
                                           settings=MicrocompactSettings(size_trigger_fraction=0.5,
                                                                         size_target_fraction=0.01))
    assert result.cleared_ids == [f"t{i}" for i in range(1, 7)]


# ── size trigger ─────────────────────────────────────────────────────────────────────────


def _size(msgs: list[BaseMessage], total: int, window: int, **settings):
    return maybe_size_based_microcompact(msgs, total, window, token_of=tokens,
                                         settings=MicrocompactSettings(**settings))


def test_size_clearing_stops_as_soon_as_the_target_is_reached():
    msgs = rounds(12)
    total = sum(tokens(m) for m in msgs)
    gain = tokens(msgs[2]) - tokens(cleared_copy(msgs[2], "size"))  # every result saves the same
    window = 2 * total
    target = total - 2 * gain - 1  # two clearings are one token short; the third reaches it
    result = _size(msgs, total, window, size_trigger_fraction=0.4, size_target_fraction=target / window)
    assert result.cleared_ids == ["t0", "t1", "t2"]
    assert result.tokens_saved == 3 * gain
    assert (result.trigger, total - sum(tokens(m) for m in result.messages)) == ("size", 3 * gain)


def test_size_clearing_fires_only_above_the_trigger():
    msgs = rounds(12)
    total = sum(tokens(m) for m in msgs)
    at = _size(msgs, total, total, size_trigger_fraction=1.0)
    assert (at.cleared_ids, at.trigger, at.tokens_saved) == ([], None, 0)
    assert _size(msgs, total + 1, total, size_trigger_fraction=1.0).cleared_ids


def test_results_no_bigger_than_the_placeholder_are_left_alone():
    placeholder = tokens(ToolMessage(CLEARED_PLACEHOLDER, tool_call_id="x"))
    same = "y" * ((placeholder - 4) * 4)  # as many tokens as the placeholder: clearing saves 0
    one_more = "z" * ((placeholder - 3) * 4)  # one token more: clearing saves 1
    msgs = rounds(8, size=2)
    msgs[2] = ToolMessage(same, tool_call_id="c0", name="read_file", id="t0")
    msgs[4] = ToolMessage(one_more, tool_call_id="c1", name="read_file", id="t1")
    total = 10_000
    result = _size(msgs, total, total, size_trigger_fraction=0.5, size_target_fraction=0.01)
    assert "t0" not in result.cleared_ids and "t1" in result.cleared_ids
    assert tokens(msgs[2]) == placeholder and tokens(msgs[4]) == placeholder + 1


def test_size_pressure_with_nothing_clearable_returns_the_view_unchanged():
    msgs = rounds(4)  # all four are among the keep_recent newest
    total = sum(tokens(m) for m in msgs)
    result = _size(msgs, total, total, size_trigger_fraction=0.5, size_target_fraction=0.01)
    assert (result.messages, result.cleared_ids, result.trigger, result.tokens_saved) == (msgs, [], None, 0)


def test_size_clearing_with_default_settings_clears_past_the_whole_window():
    msgs = rounds(12)
    total = sum(tokens(m) for m in msgs)
    result = maybe_size_based_microcompact(msgs, total + 1, total, token_of=tokens)
    assert result.trigger == "size" and result.cleared_ids == [f"t{i}" for i in range(7)]


def test_an_empty_path_field_in_the_artifact_does_not_hide_the_real_one():
    from mtagent.context.compaction.microcompact import _paths_by_call

    msgs = [AIMessage("", id="a", tool_calls=[{"id": "c1", "name": "grep", "args": {}}]),
            ToolMessage("hits", tool_call_id="c1", name="grep", id="t1",
                        artifact={"file_path": "", "path": "docs/x.md"}),
            ToolMessage("more", tool_call_id="c2", name="grep", id="t2", artifact={"file": 7, "dir": "docs/y"})]
    assert _paths_by_call(msgs) == {"c1": "docs/x.md", "c2": "docs/y"}
