"""Repeated tool output as a reference to the earlier result still in the view (issue 34's lever)."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from mtagent.context.tokens import MessageTokenCounter
from mtagent.context.tool_results.repeats import MIN_RUN_LINES, RepeatIndex
from mtagent.replay.mtagent_strategy import MTAgentStrategy
from mtagent.replay.simulate import simulate
from mtagent.replay.strategy_base import StrategyContext
from mtagent.replay.trajectory import finish

LOG = [f"collected test_{i} ... ok" for i in range(20)]


def _result(call_id: str, lines: list[str], name: str = "shell") -> ToolMessage:
    return ToolMessage("\n".join(lines), tool_call_id=call_id, name=name)


def _seen(index: RepeatIndex, message: ToolMessage) -> ToolMessage:
    folded = index.fold(message)
    index.add(folded)
    return folded


def test_a_repeated_run_becomes_one_reference_line_naming_the_earlier_result() -> None:
    index = RepeatIndex()
    _seen(index, _result("call_1", LOG))
    again = _seen(index, _result("call_2", ["$ pytest -q", *LOG[2:14], "done"]))
    lines = str(again.content).split("\n")
    assert lines[0] == "$ pytest -q" and lines[-1] == "done" and len(lines) == 3
    assert "lines 2–13 repeat lines 3–14 of the result of call_1 (shell)" in lines[1]


def test_error_lines_stay_and_split_a_run() -> None:
    index = RepeatIndex()
    error = "AssertionError: expected 3, got 4"
    _seen(index, _result("call_1", [*LOG[:10], error, *LOG[10:]]))
    again = str(_seen(index, _result("call_2", [*LOG[:10], error, *LOG[10:13]])).content).split("\n")
    assert error in again  # kept verbatim though the earlier result holds it too
    assert again[0].startswith("[lines 1–10 repeat")
    assert again[-3:] == LOG[10:13]  # three repeated lines after the error: shorter than a run, kept


def test_short_runs_and_blank_lines_are_left_alone() -> None:
    index = RepeatIndex()
    _seen(index, _result("call_1", ["", "", "", "", "", "", *LOG[:MIN_RUN_LINES - 1]]))
    message = _result("call_2", ["", "", "", "", "", "", "x", *LOG[:MIN_RUN_LINES - 1]])
    assert index.fold(message) is message


def test_a_result_no_longer_in_the_view_is_never_referenced() -> None:
    index = RepeatIndex()
    first = _seen(index, _result("call_1", LOG))
    index.retain([first.model_copy(update={"content": "[cleared]"})])  # cleared by microcompact
    message = _result("call_2", LOG)
    assert index.fold(message) is message
    index.add(message)
    index.retain([])  # compacted away
    assert index.fold(_result("call_3", LOG)).content == "\n".join(LOG)


def test_off_and_non_text_results_pass_through() -> None:
    index = RepeatIndex(min_lines=0)
    index.add(_result("call_1", LOG))
    message = _result("call_2", LOG)
    assert index.fold(message) is message
    blocks = ToolMessage(content=[{"type": "text", "text": "\n".join(LOG)}], tool_call_id="call_3")
    live = RepeatIndex()
    live.add(_result("call_1", LOG))
    assert live.fold(blocks) is blocks


def test_the_engine_folds_a_rerun_as_it_arrives() -> None:
    """Through a session opened like every live one (the replay's mtagent strategy drives it)."""
    messages = [SystemMessage("sys"), HumanMessage("run the tests twice")]
    for call_id in ("call_1", "call_2"):
        messages.append(AIMessage("", id=f"a-{call_id}", tool_calls=[
            {"id": call_id, "name": "shell", "args": {"command": "pytest"}, "type": "tool_call"}]))
        messages.append(_result(call_id, LOG))
    messages.append(AIMessage("done", id="a-end"))
    traj = finish(messages, "test")
    view = simulate(traj, "mtagent", window=65_536).turns[-1]
    assert view.view_tokens < simulate(traj, "raw", window=65_536).turns[-1].view_tokens
    strategy = MTAgentStrategy(StrategyContext(system=[messages[0]], window=65_536, counter=MessageTokenCounter()))
    try:
        strategy.step(messages[1:3])
        strategy.step(messages[3:5])
        sent = strategy.step(messages[5:7]).view
    finally:
        strategy.close()
    results = [m for m in sent if isinstance(m, ToolMessage)]
    assert results[0].content == "\n".join(LOG)
    assert str(results[1].content).startswith("[lines 1–20 repeat lines 1–20 of the result of call_1 (shell)")
