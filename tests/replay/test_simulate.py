"""Open-loop replay through each strategy: valid views, incremental state, honest accounting."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from mtagent.config import Settings
from mtagent.context.tokens import MessageTokenCounter
from mtagent.replay.formats import load_trajectory
from mtagent.replay.simulate import simulate
from mtagent.replay.strategies import (
    MASK_KEEP_TURNS,
    PEERS,
    STRATEGY_NAMES,
    MaskingStrategy,
    StrategyContext,
    make_strategy,
)
from mtagent.replay.trajectory import Trajectory, pairing_violations

SMALL = "mini-swe-agent/deepseek_lite_dev_noparallel__pydicom__pydicom-901.traj.json"
# A small window needs a small reserve, buffer and tail, or the threshold would be negative.
SMALL_WINDOW = 8_192
TIGHT = Settings.model_validate({"context": {
    "summary_reserved_tokens": 1_000, "autocompact_buffer_tokens": 1_000,
    "compression_preserve_min_tokens": 1_000, "compression_preserve_max_tokens": 3_000,
}})


def _synthetic(turns: int, result_chars: int) -> Trajectory:
    msgs: list = [SystemMessage("You are a coding agent.", id="sys"), HumanMessage("Fix src/pkg/core.py; never edit tests.", id="task")]
    calls = []
    for i in range(turns):
        calls.append(len(msgs))
        msgs.append(AIMessage(f"step {i}", id=f"a{i}", tool_calls=[{"id": f"c{i}", "name": "bash", "args": {"command": f"cat f{i}.txt"}}]))
        msgs.append(ToolMessage(f"line {i} " * (result_chars // 7), id=f"t{i}", tool_call_id=f"c{i}", name="bash"))
    calls.append(len(msgs))
    msgs.append(AIMessage("done", id="final"))
    return Trajectory(msgs, "synthetic", calls)


def test_raw_view_is_the_whole_history_and_costs_grow_from_cache_reads() -> None:
    traj = _synthetic(20, 2000)
    result = simulate(traj, "raw", window=1_000_000)
    counter = MessageTokenCounter()
    assert [t.view_tokens for t in result.turns][-1] == counter.estimate(traj.messages[:-1])
    assert all(t.shared_tokens > 0 for t in result.turns[1:])
    assert result.violations == 0 and result.retention == 1.0 and result.summary_calls == 0


def test_masking_keeps_only_the_last_ten_turns_observations() -> None:
    traj = _synthetic(25, 500)
    ctx = StrategyContext(system=[traj.messages[0]], window=10**6, counter=MessageTokenCounter())
    strategy = MaskingStrategy(ctx)
    last = 1
    for index in traj.model_calls:
        view = strategy.step(traj.messages[last:index]).view
        last = index
    results = [m for m in view if isinstance(m, ToolMessage)]
    full = [m for m in results if not str(m.content).startswith("Old environment output")]
    assert len(full) == MASK_KEEP_TURNS
    assert results[0].content == "Old environment output: (1 lines omitted)"


@pytest.mark.parametrize("name", STRATEGY_NAMES)
def test_every_strategy_gives_protocol_valid_views_on_a_real_session(trajectories: Path, name: str) -> None:
    traj = load_trajectory(trajectories / SMALL)
    result = simulate(traj, name, window=SMALL_WINDOW, settings=TIGHT)
    assert len(result.turns) == len(traj.model_calls)
    assert result.violations == 0
    assert 0 <= (result.retention or 0) <= 1


@pytest.mark.parametrize("name", ["mtagent", "mtagent-sm", "lc-summarization", "threshold-compact"])
def test_summarizing_strategies_summarize_when_the_window_is_small_and_pay_for_it(trajectories: Path, name: str) -> None:
    traj = load_trajectory(trajectories / SMALL)
    raw = simulate(traj, "raw", window=SMALL_WINDOW, settings=TIGHT)
    result = simulate(traj, name, window=SMALL_WINDOW, settings=TIGHT)
    assert result.compactions >= 1
    assert result.cumulative_tokens < raw.cumulative_tokens
    summary_turns = [t for t in result.turns if t.summary_calls]
    if name != "lc-summarization":  # LangChain skips the model when its trimmed input is empty
        assert summary_turns
    for t in summary_turns:
        assert t.summary_input_tokens > 0 and t.summary_output_tokens > 0


def test_lc_clear_tool_uses_clears_old_results_with_langchains_placeholder() -> None:
    traj = _synthetic(30, 3000)
    ctx = StrategyContext(system=[traj.messages[0]], window=20_000, counter=MessageTokenCounter())
    strategy = make_strategy("lc-clear-tool-uses", ctx)
    last = 1
    for index in traj.model_calls:
        view = strategy.step(traj.messages[last:index]).view
        last = index
    cleared = [m for m in view if isinstance(m, ToolMessage) and m.content == "[cleared]"]
    assert cleared and pairing_violations(view) == (0, 0)
    assert isinstance(view[0], SystemMessage)


def test_threshold_compact_keeps_a_recent_tail_behind_one_summary() -> None:
    traj = _synthetic(40, 3000)
    result = simulate(traj, "threshold-compact", window=45_000)
    assert result.compactions >= 1 and result.peak_tokens < 45_000


def test_peers_and_names_are_consistent() -> None:
    assert set(PEERS) < set(STRATEGY_NAMES)
    from mtagent.errors import UsageError

    with pytest.raises(UsageError, match="unknown strategy"):
        make_strategy("nope", StrategyContext(system=[], window=1000, counter=MessageTokenCounter()))


def test_claude_code_replay_reports_the_recorded_usage(trajectories: Path) -> None:
    traj = load_trajectory(trajectories / "claude-code/tool_heavy.jsonl")
    result = simulate(traj, "raw")
    assert result.recorded_input is not None and result.recorded_input > result.cumulative_tokens


def test_session_memory_updates_are_priced_as_model_calls(trajectories: Path) -> None:
    traj = load_trajectory(trajectories / SMALL)
    notes_early = TIGHT.model_copy(update={"session_memory": TIGHT.session_memory.model_copy(
        update={"init_tokens": 2_000, "update_min_tokens": 1_000})})
    plain = simulate(traj, "mtagent", window=SMALL_WINDOW, settings=notes_early)
    with_notes = simulate(traj, "mtagent-sm", window=SMALL_WINDOW, settings=notes_early)
    assert with_notes.summary_calls > plain.summary_calls
    assert with_notes.violations == 0


@pytest.mark.parametrize("name", ["mtagent", "mtagent-sm"])
def test_the_engine_strategy_leaves_no_temporary_folder_when_given_none(name: str, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a ``workdir`` the strategy makes its own throw-away store (transcript, artifacts) and
    removes it when closed; a caller's ``workdir`` is the caller's to keep."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    traj = _synthetic(12, 3000)
    strategy = make_strategy(name, StrategyContext(system=[traj.messages[0]], window=SMALL_WINDOW,
                                                   counter=MessageTokenCounter(), settings=TIGHT))
    last = 1
    for index in traj.model_calls:
        strategy.step(traj.messages[last:index])
        last = index
    assert list(scratch.iterdir())  # the store lived there while the replay ran
    strategy.close()
    assert list(scratch.iterdir()) == []
    mine = tmp_path / "mine"
    kept = make_strategy(name, StrategyContext(system=[traj.messages[0]], window=SMALL_WINDOW,
                                               counter=MessageTokenCounter(), settings=TIGHT, workdir=mine))
    kept.step(traj.messages[1:traj.model_calls[0]])
    kept.close()
    assert (mine / "home").is_dir()
