"""Honest reporting (#38): every chained task reported, figures independent of --scratch, and a
task whose TASK line is not the first line still works in a chain."""

from __future__ import annotations

import json
from pathlib import Path

from mtagent.agent.context_model import find_task
from mtagent.eval.policies import load_policies
from mtagent.eval.report import report
from mtagent.eval.runner import finished_pairs, plan_units, run_units
from mtagent.eval.suite import builtin_tasks
from mtagent.eval.tasks import read_eval_tasks
from mtagent.eval.worker import chained_prompt
from mtagent.replay.executors import make_executor
from langchain_core.messages import HumanMessage


def _run(tasks: list, scratch: Path, out: Path, chain: int = 1,
         policies: tuple[str, ...] = ("threshold",)) -> list[dict]:
    units, _ = plan_units(tasks, load_policies(list(policies)), scratch, model="context-test:", chain=chain,
                          done=finished_pairs(out))
    executor = make_executor("local", workers=1)
    try:
        return run_units(units, executor, out)
    finally:
        executor.close()


def _controls(tmp_path: Path, count: int) -> list:
    """Short tasks every policy solves; the TASK line is not the prompt's first line."""
    lines = []
    for i in range(count):
        folder = tmp_path / "repos" / f"c{i}"
        folder.mkdir(parents=True)
        (folder / "limits.py").write_text(f"LIMIT = {100 + i}\n")
        prompt = (f"A control task.\nTASK c{i}\n1. Read `limits.py`.\n2. Write the value of LIMIT into `answer.txt`.\n")
        check = f"python3 -c \"import sys; sys.exit(open('answer.txt').read().strip() != '{100 + i}')\""
        lines.append(json.dumps({"id": f"c{i}", "task": prompt, "cwd": f"repos/c{i}", "check": check}))
    (tmp_path / "tasks.jsonl").write_text("\n".join(lines) + "\n")
    return read_eval_tasks(tmp_path / "tasks.jsonl")


def test_a_chain_reports_every_task_and_controls_survive_it(tmp_path: Path) -> None:
    tasks = _controls(tmp_path, 3)
    out = tmp_path / "chain.jsonl"
    records = _run(tasks, tmp_path / "s", out, chain=2)
    assert sorted(r["task"] for r in records) == ["c0", "c1", "c2"]
    assert {r["chain"] for r in records} == {2}  # the last, shorter chain too: it ran under --chain 2
    assert all(r["solved"] for r in records), [(r["task"], r.get("error"), r.get("check")) for r in records]
    data = report(out, ["threshold"], chain=2)
    assert data["policies"][0]["tasks"] == 3 and data["policies"][0]["solved"] == 3
    assert _run(tasks, tmp_path / "s", out, chain=2) == []  # resumed: nothing left to run


def test_the_folder_line_goes_under_the_task_line_wherever_it_is() -> None:
    prompt = "Please review.\nTASK c1\n1. Read `a.py`.\n2. Write the value of X into `o.txt`.\n"
    task = read_task("c1", prompt)
    shown = chained_prompt(task, "c1")
    seen = find_task([HumanMessage(shown)])
    assert seen is not None and seen.folder == "c1" and shown.startswith("Please review.\nTASK c1\n")
    plain = read_task("p1", "Fix the bug in a.py.")
    assert chained_prompt(plain, "p1").startswith("Work in the folder `p1`.")


def read_task(task_id: str, prompt: str):  # noqa: ANN201 — an EvalTask
    from mtagent.agent.batch import BatchTask
    from mtagent.eval.tasks import EvalTask

    return EvalTask(BatchTask(id=task_id, task=prompt, line=1))


def test_figures_do_not_depend_on_the_scratch_path(tmp_path: Path) -> None:
    tasks = builtin_tasks(tmp_path / "suite", count=2)
    short = _run(tasks, tmp_path / "s", tmp_path / "a.jsonl", policies=("mtagent",))
    long = _run(tasks, tmp_path / "a-much-longer-scratch-folder" / "with" / "more" / "levels",
                tmp_path / "b.jsonl", policies=("mtagent",))
    figures = [[(r["task"], r["solved"], r["calls"], r["compactions"], r["main"], r["side"]) for r in run]
               for run in (short, long)]
    assert figures[0] == figures[1]
    assert all(Path(r["workdir"]).is_relative_to(tmp_path / "s") for r in short)  # kept for reading


def test_a_lanes_folder_that_is_a_link_is_refused(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    import pytest

    from mtagent.errors import UsageError
    from mtagent.eval.lanes import LANES_ENV, lane, lanes_root

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "lanes").symlink_to(elsewhere)
    monkeypatch.setenv(LANES_ENV, str(tmp_path / "lanes"))
    with pytest.raises(UsageError, match="not a folder of yours"):
        lanes_root()
    monkeypatch.setenv(LANES_ENV, str(tmp_path / "mine"))
    (tmp_path / "mine").mkdir(mode=0o777)
    (tmp_path / "mine").chmod(0o777)
    with lane() as first, lane() as second:  # two units at once never share a lane
        assert first != second and first.parent == second.parent == tmp_path / "mine"
        assert len(first.name) == len(second.name) == 1
    assert (tmp_path / "mine").stat().st_mode & 0o077 == 0


def test_hand_offs_and_session_notes_are_priced_like_main_calls(tmp_path: Path) -> None:
    """The context-test model writes them itself: they are model calls, metered apart and priced at the
    same row, cache reads included (they cost $0 when the test model's sessions stayed extractive)."""
    from mtagent.pricing import Usage, cost_usd

    task = builtin_tasks(tmp_path / "suite", count=2)[1]  # 40 reads on a 12K window
    out = tmp_path / "side.jsonl"
    records = _run([task], tmp_path / "s", out, policies=("mtagent", "threshold"))
    for record in records:
        side = Usage.from_dict(record["side"])
        assert side.calls >= 1 and side.output > 0 and side.cache_read > 0, record["policy"]
    data = report(out, ["mtagent", "threshold"])
    for summary, record in zip(data["policies"], sorted(records, key=lambda r: r["policy"] != "mtagent")):
        expected = cost_usd(Usage.from_dict(record["side"]), record["prices"])
        assert summary["side_cost_usd"] == round(expected, 6) > 0


def test_the_report_counts_step_limit_endings_per_policy(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    rows = [{"task": "t1", "policy": "a", "chain": 1, "status": "done", "turn_status": "max_steps", "solved": False},
            {"task": "t2", "policy": "a", "chain": 1, "status": "done", "turn_status": "done", "solved": True},
            {"task": "t1", "policy": "b", "chain": 1, "status": "done", "turn_status": "done", "solved": True}]
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    data = report(out, ["a", "b"])
    assert [p["step_limit"] for p in data["policies"]] == [["t1"], []]
