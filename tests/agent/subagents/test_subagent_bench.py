"""The benchmark's claim holds on a small run: the parent's input drops at equal facts."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "subagent_bench.py"


def test_delegating_the_exploration_halves_the_parents_input_at_equal_facts(tmp_path, capsys, monkeypatch):
    spec = importlib.util.spec_from_file_location("subagent_bench", BENCH)
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "subagent_bench", bench)  # dataclasses look their module up
    monkeypatch.syspath_prepend(str(BENCH.parent))  # as when run as a script: it imports results_file beside it
    spec.loader.exec_module(bench)
    monkeypatch.setattr(bench, "RESULTS", tmp_path / "out.md")
    assert bench.main(["--files", "5", "--follow-ups", "2"]) == 0
    results = dict(line.split(" ", 1)[1].split("=") for line in capsys.readouterr().out.splitlines()
                   if line.startswith("RESULT "))
    assert results["facts_equal"] == "1" and float(results["parent_input_drop"]) >= 0.5
