"""context_bench reports issue 16's recall probe beside retention (mtagent row, RESULT lines)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from mtagent.replay.recall_probe import ProbeOutcome, RecallProbeResult

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "context_bench.py"
TINY = "swe-agent/trajectories__demonstrations__ctf__pwn__warmup.traj"
WINDOW = 65_536


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
