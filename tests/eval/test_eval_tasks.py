"""Task files are untrusted: every bad line is reported before anything runs (#29)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from mtagent.errors import UsageError
from mtagent.eval.tasks import local_clone, read_eval_tasks


def write(path: Path, *lines: object) -> Path:
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return path


def test_batch_lines_with_check_and_setup_are_read(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    tasks = read_eval_tasks(write(tmp_path / "t.jsonl", {"id": "a1", "task": "fix", "cwd": "a", "check": "true",
                                                         "setup": "echo hi", "check_timeout": 5}))
    assert tasks[0].check == "true" and tasks[0].setup == "echo hi" and tasks[0].check_timeout == 5.0
    assert tasks[0].batch.approval == "allow"  # eval runs in a scratch copy: allowed unless the line says deny


def test_every_bad_line_is_reported_and_nothing_runs(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    path = write(tmp_path / "t.jsonl", '{"id": "ok", "task": "x", "cwd": "a"}', "{not json", '["a list"]',
                 {"id": "esc", "task": "x", "cwd": "../.."}, {"id": "url", "task": "x", "repo": "https://host/r.git",
                                                               "commit": "abc"},
                 {"id": "t", "task": "x", "cwd": "a", "check": 3}, {"id": "t2", "task": "x", "cwd": "a",
                                                                    "check_timeout": -1},
                 {"id": "t3", "task": "x", "cwd": "a", "surprise": 1})
    with pytest.raises(UsageError) as err:
        read_eval_tasks(path)
    text = str(err.value)
    assert "line 2: not valid JSON" in text
    assert "line 3: a task must be a JSON object" in text
    assert "line 4: cwd '../..' leaves" in text
    assert "line 5: repo 'https://host/r.git' is a URL: evaluation does not use the network" in text
    assert "line 6: 'check' must be a non-empty command string" in text
    assert "line 7: 'check_timeout' must be seconds" in text
    assert "line 8: unknown field 'surprise'" in text
    assert "line 1" not in text


def test_scp_style_remote_is_refused_too(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", {"id": "r", "task": "x", "repo": "git@github.com:o/r.git", "commit": "main"})
    with pytest.raises(UsageError, match="is a URL"):
        read_eval_tasks(path)


def _git_repo(path: Path) -> str:
    path.mkdir(parents=True)
    (path / "f.py").write_text("x = 1\n")
    for args in (["init", "-q"], ["add", "."], ["-c", "user.email=a@b", "-c", "user.name=t", "commit", "-qm", "i"]):
        subprocess.run(["git", "-C", str(path), *args], check=True)
    return subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_swe_bench_line_uses_a_local_clone_and_its_tests(tmp_path: Path) -> None:
    commit = _git_repo(tmp_path / "repos" / "octo__lib")
    line = {"instance_id": "octo__lib-1", "repo": "octo/lib", "base_commit": commit, "problem_statement": "bug",
            "FAIL_TO_PASS": json.dumps(["tests/test_a.py::test_x"]), "test_patch": "diff --git a/x b/x\n",
            "PASS_TO_PASS": "[]", "version": "1.0"}
    task = read_eval_tasks(write(tmp_path / "swe.jsonl", line), repos=tmp_path / "repos")[0]
    assert task.id == "octo__lib-1" and task.prompt == "bug"
    assert task.check == "python3 -m pytest -q tests/test_a.py::test_x"
    assert task.check_patch == "diff --git a/x b/x\n"
    assert task.batch.repo == str((tmp_path / "repos" / "octo__lib").resolve()) and task.batch.commit == commit


def test_swe_bench_line_without_a_clone_says_how_to_get_one(tmp_path: Path) -> None:
    line = {"instance_id": "o__r-1", "repo": "o/r", "base_commit": "abc", "problem_statement": "p",
            "test_cmd": "pytest"}
    with pytest.raises(UsageError, match=r"repo 'o/r' has no local clone .*clone it to REPOS/o__r and pass --repos"):
        read_eval_tasks(write(tmp_path / "swe.jsonl", line), repos=tmp_path)
    with pytest.raises(UsageError, match="is a URL"):
        read_eval_tasks(write(tmp_path / "swe2.jsonl", {**line, "repo": "https://github.com/o/r"}), repos=tmp_path)


def test_a_clone_found_through_a_symlink_leaving_repos_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "repos").mkdir()
    (tmp_path / "repos" / "o__r").symlink_to(outside)
    with pytest.raises(ValueError, match="no local clone"):
        local_clone("o/r", tmp_path / "repos")
    with pytest.raises(ValueError, match="is not owner/name"):
        local_clone("../x", tmp_path / "repos")
