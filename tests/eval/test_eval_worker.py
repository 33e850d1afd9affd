"""The worker: fresh workspaces per policy (copies and clones), setup, checks, patches (#29)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from mtagent.agent.scripted import ScriptedChatModel, reply, tool_call
from mtagent.eval.policies import load_policy
from mtagent.eval.tasks import read_eval_tasks
from mtagent.eval.worker import EvalUnit, run_unit


def _writer(_spec: object) -> ScriptedChatModel:
    return ScriptedChatModel([tool_call("write_file", {"file_path": "fix.txt", "content": "fixed\n"}), reply("done")])


def _git(path: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True, check=True).stdout.strip()


def test_each_policy_edits_its_own_copy_and_the_check_decides(tmp_path: Path) -> None:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "app.py").write_text("x = 1\n")
    (tmp_path / "proj" / "escape").symlink_to("/etc")  # copied as a link, never followed
    tasks = tmp_path / "t.jsonl"
    tasks.write_text("\n".join(json.dumps(x) for x in [
        {"id": "ok", "task": "fix it", "cwd": "proj", "check": "grep -q fixed fix.txt"},
        {"id": "broken-setup", "task": "fix it", "cwd": "proj", "setup": "exit 7", "check": "true"},
    ]) + "\n")
    first, second = read_eval_tasks(tasks)
    records = run_unit(EvalUnit(load_policy("mtagent"), (first,), str(tmp_path / "s")), _writer)
    assert records[0]["solved"] and records[0]["status"] == "done" and records[0]["calls"] == 2
    assert not (tmp_path / "proj" / "fix.txt").exists()  # the task's own folder is never touched
    assert Path(records[0]["workdir"]).parent.parent.name == "mtagent"  # no slot given: the policy's name
    assert (Path(records[0]["workdir"]) / "escape").is_symlink()
    failed = run_unit(EvalUnit(load_policy("threshold"), (second,), str(tmp_path / "s")), _writer)[0]
    assert failed["status"] == "setup_failed" and failed["setup"]["exit_code"] == 7 and not failed["solved"]


def test_a_repo_task_is_cloned_at_its_commit_and_a_test_patch_goes_in_before_the_check(tmp_path: Path) -> None:
    repo = tmp_path / "repos" / "octo__lib"
    repo.mkdir(parents=True)
    (repo / "a.txt").write_text("one\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.email=a@b", "-c", "user.name=t", "commit", "-qm", "first")
    base = _git(repo, "rev-parse", "HEAD")
    (repo / "a.txt").write_text("two\n")
    _git(repo, "-c", "user.email=a@b", "-c", "user.name=t", "commit", "-qam", "second")
    patch = "--- /dev/null\n+++ b/test_new.txt\n@@ -0,0 +1 @@\n+added by the test patch\n"
    line = {"instance_id": "octo__lib-1", "repo": "octo/lib", "base_commit": base, "problem_statement": "p",
            "test_cmd": "grep -q one a.txt && grep -q added test_new.txt && test -f fix.txt", "test_patch": patch}
    (tmp_path / "swe.jsonl").write_text(json.dumps(line) + "\n")
    task = read_eval_tasks(tmp_path / "swe.jsonl", repos=tmp_path / "repos")[0]
    record = run_unit(EvalUnit(load_policy("mtagent"), (task,), str(tmp_path / "s")), _writer)[0]
    assert record["solved"], record["check"]
    assert (Path(record["workdir"]) / "a.txt").read_text() == "one\n"
