"""The built-in suite under two policies, with the context-sensitive test model, end to end (#29).

Same scratch folder and home for every executor, so workspaces (and the paths the model is
shown) are byte-identical: the process pool and a local Ray instance must give equal results —
every decision (solved, calls, compactions, recalls) and every token count exactly. A recall result
names messages and the session by id; the eval worker makes those ids counted, not random or timed
(worker.session_id_for, session/ids.sequential_ids), so nothing a request holds depends on the run.
A subset of the suite keeps this fast; the suite's size is pinned in test_eval_suite.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtagent.cli.app import app
from mtagent.eval.policies import Policy, load_policies, merge_sections
from mtagent.eval.report import report
from mtagent.eval.runner import finished_pairs, plan_units, run_units
from mtagent.eval.suite import builtin_tasks
from mtagent.replay.executors import make_executor

SUBSET = [0, 1, 3, 5]  # a constant (far, solved by recall), an error, a constant (lost), a constraint
DETERMINISTIC = ("task", "policy", "chain", "status", "solved", "calls", "compactions", "microcompactions", "recalls",
                 "session_id")


EXTRACTIVE = {"agent": {"compact_model": "extractive"}}  # hand-offs that keep no fact: policies part ways


def _run(tmp_path: Path, executor_name: str, out: Path, chain: int = 1, subset: list[int] = SUBSET) -> list[dict]:
    every = builtin_tasks(tmp_path / "suite")
    tasks = [every[i] for i in subset]
    policies = [Policy(p.name, merge_sections(p.overlay, EXTRACTIVE)) for p in load_policies(["mtagent", "threshold"])]
    units, _ = plan_units(tasks, policies, tmp_path / "scratch", model="context-test:", chain=chain,
                          done=finished_pairs(out))
    executor = make_executor(executor_name, workers=2)
    try:
        return run_units(units, executor, out)
    finally:
        executor.close()


def _stable(records: list[dict]) -> list[dict]:
    return sorted(({k: r.get(k) for k in DETERMINISTIC} for r in records), key=lambda r: (r["task"], r["policy"]))


def test_policies_differ_for_real_and_the_pool_and_ray_agree(tmp_path: Path, ray_cluster: None) -> None:
    local = _run(tmp_path, "local", tmp_path / "local.jsonl")
    assert len(local) == 8 and all(r["status"] == "done" for r in local), local
    by = {(r["task"], r["policy"]): r for r in local}
    assert by[("b01-constant", "mtagent")]["solved"] and by[("b01-constant", "mtagent")]["recalls"] == 1
    assert not by[("b01-constant", "threshold")]["solved"]  # no recall tool, the fact compacted away
    assert by[("b01-constant", "threshold")]["recalls"] == 0
    assert all(r["compactions"] > 0 for r in local)
    assert all(r["main"]["calls"] == r["calls"] and r["main"]["cache_read"] > 0 for r in local)
    remote = _run(tmp_path, "ray", tmp_path / "ray.jsonl")
    assert _stable(remote) == _stable(local)
    tokens = {(r["task"], r["policy"]): (r["main"], r["side"]) for r in local}
    assert {(r["task"], r["policy"]): (r["main"], r["side"]) for r in remote} == tokens  # exactly: no random text
    data = report(tmp_path / "local.jsonl", ["mtagent", "threshold"])
    ray_data = report(tmp_path / "ray.jsonl", ["mtagent", "threshold"])
    assert data["paired"] == ray_data["paired"] and data["tasks"] == ray_data["tasks"]
    assert [(p["solved"], p["calls"], p["compactions"]) for p in data["policies"]] == \
        [(p["solved"], p["calls"], p["compactions"]) for p in ray_data["policies"]]
    pair = data["paired"][0]
    assert pair["only_a"] >= 1 and pair["verdict"] == "no clear difference"  # 4 tasks cannot show a win


def test_a_rerun_skips_done_pairs_and_retries_errors(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    first = _run(tmp_path, "local", out, subset=[2, 5])
    lines = out.read_text().splitlines()
    broken = json.loads(lines[0])
    broken["status"] = "error"
    out.write_text("\n".join([json.dumps(broken), *lines[1:], "{torn"]) + "\n")
    again = _run(tmp_path, "local", out, subset=[2, 5])
    assert [(r["task"], r["policy"]) for r in again] == [(broken["task"], broken["policy"])]
    assert again[0]["status"] == "done" and len(first) == 4


def test_chain_runs_tasks_as_turns_of_one_session_with_a_check_after_each(tmp_path: Path) -> None:
    records = _run(tmp_path, "local", tmp_path / "c.jsonl", chain=2, subset=[2, 5])
    assert len(records) == 4 and {r["chain"] for r in records} == {2}
    sessions = {}
    for r in records:
        sessions.setdefault((r["unit"], r["policy"]), set()).add(r["session_id"])
        assert r["check"] is not None and Path(r["workdir"]).name == r["task"]
    assert all(len(ids) == 1 for ids in sessions.values()) and len(sessions) == 2


def test_cli_json_and_a_table_that_fits_80_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    runner = CliRunner()
    args = ["eval", "--suite", "builtin", "--limit", "2", "-p", "mtagent", "-p", "masking", "--scratch",
            str(tmp_path / "s"), "-j", "1"]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [p["policy"] for p in data["policies"]] == ["mtagent", "masking"] and data["ran"] == 4
    assert all(p["tasks"] == 2 and p["cost_usd"] > 0 for p in data["policies"])
    table = runner.invoke(app, args)
    assert table.exit_code == 0 and "0 run, 4 already done" in table.output
    assert max(len(line) for line in table.output.splitlines()) <= 80
    assert "masking" in table.output and "95% CI" in table.output


def test_cli_usage_errors_are_one_line(tmp_path: Path) -> None:
    runner = CliRunner()
    for args, message in ((["eval"], "give a task file or --suite builtin"),
                          (["eval", "--suite", "nope"], "unknown suite 'nope'"),
                          (["eval", "--suite", "builtin", "-p", "nope"], "unknown policy 'nope'"),
                          (["eval", "--suite", "builtin", "-p", "mtagent", "-p", "mtagent"], "given twice"),
                          (["eval", str(tmp_path / "t.jsonl"), "--root", str(tmp_path / "nowhere")],
                           "nowhere is not a folder")):
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and message in result.output, result.output
        assert "Traceback" not in result.output
