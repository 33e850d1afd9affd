"""context_bench's figures: issue 16's recall probe beside retention (mtagent row, RESULT lines), and
issue 34's work state per strategy, summary output per summary call, summary calls priced at --summary-price."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from mtagent.replay.recall_probe import ProbeOutcome, RecallProbeResult
from mtagent.replay.work_state import WorkStateCount

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "context_bench.py"
TINY = "swe-agent/trajectories__demonstrations__ctf__pwn__warmup.traj"
WINDOW = 65_536
SMALL = "mini-swe-agent/tests__test_data__github_issue.traj.json"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("context_bench_under_test", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def test_the_probe_runs_per_session_and_lands_in_the_mtagent_row(bench, trajectories: Path, monkeypatch) -> None:
    seen: list[tuple[str, int]] = []

    def fake_probe(traj, *, label: str = "", window: int = 0, **_: object) -> RecallProbeResult:
        seen.append((label, window))
        outcomes = [ProbeOutcome(f"q{i}", "error", i < 3, 1 if i < 3 else None) for i in range(4)]
        return RecallProbeResult(label, compactions=1, outcomes=outcomes)

    monkeypatch.setattr(bench, "probe_trajectory", fake_probe)
    result = bench.run_file(TINY, str(trajectories), WINDOW)
    assert seen == [(f"{TINY}#0", WINDOW)]
    mt = result.stats["mtagent"]
    assert (mt.recall_probes, mt.recall_hits) == (4, 3)
    assert all(s.recall_probes == 0 for name, s in result.stats.items() if name != "mtagent")
    lines = bench.result_lines([result], (WINDOW,))
    assert f"RESULT mtagent_recall_probe_top5_{WINDOW}=0.7500" in lines
    assert "RESULT mtagent_recall_probe_top5=0.7500" in lines and "RESULT mtagent_recall_probes=4" in lines
    retention = next(i for i, line in enumerate(lines) if line.startswith("RESULT mtagent_retention_pressured="))
    assert lines[retention + 1] == "RESULT mtagent_recall_probe_top5=0.7500"  # beside retention
    row = next(line for line in bench.totals_table(bench.totals([result], WINDOW), "w") if line.startswith("| mtagent |"))
    assert "0.750 (3/4)" in row


def test_no_compaction_means_no_figure_not_a_made_up_one(bench, trajectories: Path) -> None:
    result = bench.run_file(TINY, str(trajectories), WINDOW)  # too short to compact: the real probe finds nothing
    assert result.stats["mtagent"].recall_probes == 0
    lines = bench.result_lines([result], (WINDOW,))
    assert f"RESULT mtagent_recall_probe_top5_{WINDOW}=none" in lines


def test_work_state_and_summary_output_reach_the_tables_and_result_lines(bench) -> None:
    stats = {name: bench.Stats(sessions=1, cumulative=100, cost={"anthropic": 50.0, "openai": 40.0},
                               bounds={"anthropic": [10.0, 20.0], "openai": [8.0, 16.0]})
             for name in bench.STRATEGY_NAMES}
    stats["raw"].cost = {"anthropic": 100.0, "openai": 100.0}
    stats["mtagent"].add(bench.Stats(summary_calls=4, summary_output=1_000, work=WorkStateCount(30, 0, {}),
                                     compactions=4))
    stats["threshold-compact"].add(bench.Stats(work=WorkStateCount(20, 3, {"goal": 2, "plan step": 1}),
                                               work_lost_sessions=["a#0"], compactions=2))
    lines = bench.acceptance_lines(stats, 32_768)
    assert "RESULT mtagent_summary_output_per_summary_32768=250.0" in lines
    assert "RESULT work_state_lost_mtagent_32768=0/30 sessions=0" in lines
    assert "RESULT work_state_lost_threshold-compact_32768=3/20 sessions=1" in lines
    table = "\n".join(bench.work_state_table(stats, "window 32,768"))
    assert "| threshold-compact | 2 | 20 | 3 | 1 | goal 2, plan step 1 |" in table
    assert "mtagent lost work state in" not in table


def test_run_file_prices_summaries_at_the_given_share(bench, trajectories: Path) -> None:
    full = bench.run_file(SMALL, str(trajectories), 4_096)
    cheap = bench.run_file(SMALL, str(trajectories), 4_096, 0.25)
    for name in ("mtagent", "threshold-compact"):
        a, b = full.stats[name], cheap.stats[name]
        assert b.summary_cost["anthropic"] == pytest.approx(0.25 * a.summary_cost["anthropic"])
    assert full.stats["threshold-compact"].summary_cost["anthropic"] > 0
    assert full.stats["threshold-compact"].work.checked > 0


def test_the_quarter_price_line_is_what_a_quarter_price_run_prints(bench, trajectories: Path) -> None:
    full = bench.run_file(SMALL, str(trajectories), 4_096)
    cheap = bench.run_file(SMALL, str(trajectories), 4_096, 0.25)
    derived = [line for line in bench.result_lines([full], (4_096,)) if "summary_price_0.25" in line]
    direct = {line.split("=")[0]: line.split("=")[1] for line in bench.result_lines([cheap], (4_096,), 0.25)}
    assert len(derived) == 2
    for line in derived:
        name, value = line.split("=")
        assert direct[name] == value
        assert direct[name.replace("_summary_price_0.25", "")] == value  # the run at 0.25 prices it directly
