"""`mtagent run` with a scripted model: a general child's "ask" follows the parent's rule for the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from model_script import script
from typer.testing import CliRunner

from mtagent.cli.app import app
from mtagent import paths
from mtagent.session.files_store import FilesStore
from mtagent.session.reader import read_records

REPORT = json.dumps({"outcome": "success", "summary": "touched it"})


@pytest.mark.parametrize("flags, runs, says", [
    ([], False, "no terminal to ask"),         # no terminal: nobody can say yes — like the parent's own call
    (["--approval", "deny"], False, None),     # denied by the policy itself, no question
    (["--approval", "allow"], True, None),
])
def test_run_settles_a_childs_question_by_the_parents_rule(project: Path, tmp_path: Path, flags, runs, says):
    marker = project / "ran.txt"
    steps = [{"tool": "task", "args": {"description": "touch a file", "prompt": "touch it", "agent": "general"}},
             {"tool": "shell", "args": {"command": f"touch {marker}"}},  # the child (same scripted model)
             REPORT,
             "ok"]
    result = CliRunner().invoke(app, ["run", "--cwd", str(project), "--model", script(tmp_path, steps), *flags, "go"])
    assert result.exit_code == 0, result.output
    assert marker.exists() is runs
    if says:
        assert says in result.stderr
    (session,) = FilesStore().session_infos(paths.project_hash(project))
    records = list(read_records(session.path))
    report = json.loads(next(r for r in records if r.get("role") == "tool" and r.get("name") == "task")["content"])
    assert report["summary"] == "touched it" and bool(report.get("open_questions")) is not runs


def test_a_childs_denial_without_a_terminal_is_said_once_whole_and_names_the_child(project: Path, tmp_path: Path):
    steps = [{"tool": "task", "args": {"description": "touch a file", "prompt": "touch it", "agent": "general"}},
             {"tool": "shell", "args": {"command": "touch ran.txt"}},
             REPORT,
             "ok"]
    result = CliRunner().invoke(app, ["run", "--cwd", str(project), "--model", script(tmp_path, steps), "go"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if "denied" in line]
    assert len(lines) == 1, result.stderr  # said once: not lost with the child's transcript, not twice
    assert lines[0].startswith("denied shell (subagent "), lines[0]
    assert lines[0].endswith("no terminal to ask (stdin is not a terminal); rerun with --approval allow to let it run")
