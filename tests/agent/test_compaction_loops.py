"""No compaction loops, by construction (#38): every read shape, under every eval policy.

On a 12K window a 6K-token read was summarized away before the model had seen it; the model read
the file again, the window filled, it compacted again — 160 steps and 159 compactions — and reads of
10K–12.9K tokens looped under every policy because ``read_file``'s 25K cap ignored the window. Each
shape runs the context-test model through a real session (the eval worker) and must finish well
under the step limit. On the old code every one of them ends at the step limit.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mtagent.context.tokens import count_text_tokens
from mtagent.eval.policies import BUILTIN_POLICIES, load_policy
from mtagent.eval.suite import SUITE_SETTINGS
from mtagent.eval.tasks import read_eval_tasks
from mtagent.eval.worker import EvalUnit, run_unit

VALUE = "4711"
MAX_STEPS = 40


def _module(tokens: int, fact_at: str) -> str:
    lines = ['"""A large module."""', ""]
    if fact_at == "top":
        lines.append(f"LEASE_SECONDS = {VALUE}")
    k = 0
    while count_text_tokens("\n".join(lines)) < tokens:
        lines.append(f"def helper_{k}(value):  # {k * 7919 % 100003:06d} padding words here")
        lines.append(f"    return value * {k % 17 + 1} + {k % 23}")
        k += 1
    if fact_at == "end":
        lines.append(f"LEASE_SECONDS = {VALUE}")
    return "\n".join(lines) + "\n"


def _task(tmp: Path, files: dict[str, str], reads: list[str], settings: dict[str, Any]) -> Any:
    repo = tmp / "repos" / "t"
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text, encoding="utf-8")
    steps = [f"{i}. Read `{path}`." for i, path in enumerate(reads, 1)]
    steps.append(f"{len(reads) + 1}. Write the value of LEASE_SECONDS into `answer.txt`.")
    prompt = "\n".join(["TASK t", "Review this repository step by step; make no other changes.", *steps,
                        "Reply DONE t when finished."])
    check = f"python3 -c \"import sys; sys.exit(0 if open('answer.txt').read().strip() == '{VALUE}' else 1)\""
    merged = {**SUITE_SETTINGS, "agent": {**SUITE_SETTINGS["agent"], "max_steps": MAX_STEPS}, **settings}
    line = {"id": "t", "task": prompt, "cwd": "repos/t", "approval": "allow", "settings": merged, "check": check}
    (tmp / "tasks.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    return read_eval_tasks(tmp / "tasks.jsonl")[0]


def _run(tmp: Path, policy: str, task: Any) -> dict[str, Any]:
    record = run_unit(EvalUnit(load_policy(policy), (task,), str(tmp / "scratch"), model="context-test:"))[0]
    assert record["status"] == "done", record
    assert record["calls"] < MAX_STEPS // 2, f"{policy}: {record['calls']} calls, {record['compactions']} compactions"
    return record


@pytest.mark.parametrize("policy", sorted(BUILTIN_POLICIES))
@pytest.mark.parametrize("tokens", [6_000, 10_000, 12_900])
def test_one_large_read_at_a_12k_window_never_loops(tmp_path: Path, policy: str, tokens: int) -> None:
    """6K looped under mtagent (issue: 159 compactions); 10K–12.9K under every policy."""
    task = _task(tmp_path, {"src/big.py": _module(tokens, "top")}, ["src/big.py"], {})
    record = _run(tmp_path, policy, task)
    assert record["solved"], record  # the fact is in the preview the window-bounded read shows


@pytest.mark.parametrize("policy", sorted(BUILTIN_POLICIES))
def test_a_large_read_whose_fact_is_past_the_preview_never_loops(tmp_path: Path, policy: str) -> None:
    task = _task(tmp_path, {"src/big.py": _module(11_000, "end")}, ["src/big.py"], {})
    record = _run(tmp_path, policy, task)
    if policy == "mtagent":  # the saved read is indexed in chunks: recall finds the one holding it
        assert record["solved"], record


@pytest.mark.parametrize("policy", sorted(BUILTIN_POLICIES))
def test_a_read_that_crosses_the_threshold_is_kept_until_the_model_has_seen_it(tmp_path: Path, policy: str) -> None:
    """Read inline (a window share that lets 5K through) after 2.5K of other reads: the read pushes the
    view over the threshold, and the compaction must keep it — the model has not seen it yet."""
    files = {"src/a.py": _module(2_500, "none"), "src/big.py": _module(5_000, "top")}
    task = _task(tmp_path, files, ["src/a.py", "src/big.py"], {"read_file": {"max_window_share": 0.5}})
    record = _run(tmp_path, policy, task)
    assert record["solved"], record
