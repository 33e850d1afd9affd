"""``run --json``, the transcript and ``/context stats`` say whether each shell command ran in the sandbox
(issue 37)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtagent import paths
from mtagent.cli.session_report import read_session_report
from mtagent.session.files_store import FilesStore
from mtagent.tools import sandbox

runner = CliRunner()


def _run(tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch) -> tuple[dict, Path]:
    from mtagent.cli.app import app

    monkeypatch.setenv("MTAGENT_SANDBOX__MODE", mode)
    project = tmp_path / f"proj-{mode}"
    project.mkdir()
    steps = tmp_path / f"steps-{mode}.json"
    steps.write_text(json.dumps([{"tool": "shell", "args": {"command": "echo hi"}},
                                 {"tool": "shell", "args": {"command": "cat ~/.ssh/nothing || true"}}, "done"]))
    result = runner.invoke(app, ["run", "--cwd", str(project), "--model", f"scripted:{steps}", "--approval", "allow",
                                 "--json", "go"])
    assert result.exit_code == 0, result.output
    (info,) = FilesStore().session_infos(paths.project_hash(project))
    return json.loads(result.stdout), Path(info.path)


def test_unsandboxed_commands_say_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data, transcript = _run(tmp_path, "off", monkeypatch)
    assert [c["sandboxed"] for c in data["commands"]] == [False, False]
    assert data["commands"][0]["command"] == "echo hi" and data["commands"][0]["exit_code"] == 0
    report = read_session_report(transcript)
    assert (report.shell_commands, report.sandboxed_commands) == (2, 0)


@pytest.mark.skipif(sandbox.probe() is not None, reason=f"sandbox cannot run here: {sandbox.probe()}")
def test_sandboxed_commands_say_so_in_json_and_the_transcript(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data, transcript = _run(tmp_path, "on", monkeypatch)
    assert [c["sandboxed"] for c in data["commands"]] == [True, True]
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    shell = [r["toolUseResult"] for r in records if r.get("role") == "tool" and r.get("name") == "shell"]
    assert [r["sandboxed"] for r in shell] == [True, True]
    report = read_session_report(transcript)
    assert (report.shell_commands, report.sandboxed_commands) == (2, 2)
