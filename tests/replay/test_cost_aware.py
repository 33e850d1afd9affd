"""Replay accounting for cache-aligned summaries, lower bounds, final calls and ``--tune``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from typer.testing import CliRunner

from mtagent.config import Settings
from mtagent.context.tokens import MessageTokenCounter
from mtagent.replay.cost import ANTHROPIC, OPENAI, PrefixCache, lower_bounds, summary_costs
from mtagent.replay.simulate import simulate
from mtagent.replay.summarizer import SummaryCall
from mtagent.replay.trajectory import Trajectory, finish
from mtagent.replay.tune import GRID, apply, best, toml_snippet, tune

COUNTER = MessageTokenCounter()


def _view(n: int) -> list:
    msgs: list = [SystemMessage("You are a coding agent. " * 50, id="sys"), HumanMessage("Fix core.py", id="u")]
    for i in range(n):
        msgs.append(AIMessage(f"step {i}", id=f"a{i}", tool_calls=[{"id": f"c{i}", "name": "bash", "args": {}}]))
        msgs.append(ToolMessage(f"output line {i} " * 120, id=f"t{i}", tool_call_id=f"c{i}", name="bash"))
    return msgs


def test_a_summary_request_that_shares_the_prefix_is_priced_as_cache_reads():
    cache = PrefixCache(COUNTER)
    main = _view(10)
    cache.request(main)
    instruction = HumanMessage("Write the hand-off sheet now.", id="compact-instruction")
    aligned = SummaryCall(0, 500, request=(*main, instruction))
    cost = summary_costs(aligned, cache)
    total = sum(COUNTER.message_tokens(m) for m in main)
    extra = COUNTER.message_tokens(instruction)
    expected = total * ANTHROPIC.read_ratio + extra * ANTHROPIC.write_ratio + 500 * ANTHROPIC.output_ratio
    assert cost["anthropic"] == pytest.approx(expected)
    # peeking does not move the cache: the next main request is still priced against `main`
    assert cache.request(main).shared_tokens == total


def test_a_summary_request_that_does_not_share_the_prefix_pays_full_price():
    cache = PrefixCache(COUNTER)
    cache.request(_view(10))
    other = [SystemMessage("A different prompt.", id="other"), *_view(10)[1:]]
    cost = summary_costs(SummaryCall(0, 500, request=tuple(other)), cache)
    tokens = sum(COUNTER.message_tokens(m) for m in other)
    assert cost["anthropic"] > tokens * ANTHROPIC.read_ratio * 5
    plain = summary_costs(SummaryCall(1_000, 500), cache)
    assert plain == {"anthropic": 1_000 + 500 * 5.0, "openai": 1_000 + 500 * 4.0}


def test_lower_bounds_write_every_token_once_then_add_a_working_context():
    requests = [(1_000, 0), (3_000, 1_000), (30_000, 3_000)]
    lb1, lb2 = lower_bounds(requests, ANTHROPIC)
    assert lb1 == pytest.approx(30_000 * 1.25)
    assert lb2 == pytest.approx(lb1 + (1_000 + 3_000 + 10_000) * 0.1)
    assert lower_bounds(requests, OPENAI)[0] == pytest.approx(30_000)


def test_a_final_tool_call_without_a_result_is_still_a_request():
    msgs = [SystemMessage("sys", id="s"), HumanMessage("go", id="u"),
            AIMessage("", id="a1", tool_calls=[{"id": "c1", "name": "bash", "args": {}}]),
            ToolMessage("ok", id="t1", tool_call_id="c1"),
            AIMessage("", id="a2", tool_calls=[{"id": "c2", "name": "bash", "args": {}}])]
    traj = finish(msgs, "test")
    assert len(traj.model_calls) == 2
    assert not traj.messages[-1].tool_calls
    assert len(simulate(traj, "raw").turns) == 2
    # an unanswered call in the middle still goes, with its message when nothing else is left
    middle = finish([*msgs[:2], AIMessage("", id="x", tool_calls=[{"id": "c9", "name": "bash", "args": {}}]),
                     *msgs[2:4], AIMessage("done", id="a3")], "test")
    assert [m.id for m in middle.messages if isinstance(m, AIMessage)] == ["a1", "a3"]


def _long_session(turns: int = 90) -> Trajectory:
    msgs: list = [SystemMessage("You are a coding agent.", id="sys"),
                  HumanMessage("Fix src/pkg/core.py; never edit tests.", id="task")]
    calls = []
    for i in range(turns):
        calls.append(len(msgs))
        msgs.append(AIMessage(f"step {i}", id=f"a{i}",
                              tool_calls=[{"id": f"c{i}", "name": "bash", "args": {"command": f"cat f{i}.txt"}}]))
        msgs.append(ToolMessage(f"line {i} " * 400, id=f"t{i}", tool_call_id=f"c{i}", name="bash"))
    calls.append(len(msgs))
    msgs.append(AIMessage("done", id="end"))
    return Trajectory(messages=msgs, format="test", model_calls=calls)


def test_mtagent_summary_calls_are_cache_aligned_and_cost_less_than_unaligned():
    traj = _long_session()
    aligned = simulate(traj, "mtagent", window=65_536)
    unaligned = simulate(traj, "mtagent", window=65_536,
                         settings=Settings(context={"cache_aligned_summaries": False}))
    assert aligned.summary_calls > 0
    assert aligned.summary_cost["anthropic"] < unaligned.summary_cost["anthropic"]
    assert aligned.retention_of("task") == 1.0


def test_the_cost_trigger_is_cheaper_than_the_threshold_on_a_long_session():
    traj = _long_session()
    cost = simulate(traj, "mtagent", window=131_072)
    threshold = simulate(traj, "mtagent", window=131_072, settings=Settings(context={"compaction_trigger": "threshold"}))
    assert cost.compactions > threshold.compactions
    assert cost.cached_cost["anthropic"] < 0.8 * threshold.cached_cost["anthropic"]
    assert cost.overflows == 0 and cost.violations == 0


def test_tune_scores_the_grid_and_picks_the_cheapest_with_retention():
    grid = [{}, {("context", "compaction_trigger"): "threshold"}]
    scores = tune([_long_session()], Settings(), window=131_072, grid=grid)
    assert [s.candidate for s in scores] == grid
    chosen = best(scores)
    assert chosen is scores[0] and scores[0].share < scores[1].share
    assert toml_snippet(scores[1]) == '[context]\ncompaction_trigger = "threshold"'


def test_every_grid_candidate_is_a_valid_setting():
    for candidate in GRID:
        apply(Settings(), candidate)
    with pytest.raises(ValueError):
        apply(Settings(), {("context", "compaction_trigger"): "sometimes"})


def test_replay_tune_prints_a_config_snippet(tmp_path: Path):
    from mtagent.cli.app import app

    recording = tmp_path / "session.traj.json"
    history = [{"role": "system", "content": "You are a coding agent."},
               {"role": "user", "content": "Fix src/pkg/core.py; never edit tests."}]
    for i in range(40):
        history.append({"role": "assistant", "content": f"THOUGHT: step {i}\n```bash\ncat f{i}.txt\n```"})
        history.append({"role": "user", "content": f"<output>{'line ' * 400}</output>"})
    recording.write_text(json.dumps({"info": {}, "messages": history, "trajectory_format": "mini-swe-agent-1"}))
    result = CliRunner().invoke(app, ["replay", "--tune", "--json", str(recording), "-w", "65536"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert len(data["candidates"]) == len(GRID) and "best" in data and isinstance(data["toml"], str)
    text = CliRunner().invoke(app, ["replay", "--tune", str(recording), "-w", "65536"])
    assert text.exit_code == 0 and "paste into .mtagent/config.toml" in text.output
