"""``mtagent run`` for scripts: --json, the task from stdin, tool failures and denials, config errors exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtagent.cli.app import app

runner = CliRunner()


def script(tmp_path: Path, steps: list) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(steps), encoding="utf-8")
    return f"scripted:{path}"


def test_json_is_the_only_thing_on_stdout(project, tmp_path):
    result = runner.invoke(app, ["run", "--cwd", str(project), "--model", script(tmp_path, ["Done: 42."]),
                                 "--json", "answer"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["answer"] == "Done: 42." and data["status"] == "done" and data["model_calls"] == 1
    assert len(data["session_id"]) >= 20 and set(data["tokens"]) >= {"input", "output", "cache_read", "cache_write"}
    assert "cost_usd" in data


def test_dash_reads_the_task_from_stdin(project, tmp_path):
    result = runner.invoke(app, ["run", "--cwd", str(project), "--model", script(tmp_path, ["ok"]), "-"],
                           input="summarize the diff\n")
    assert result.exit_code == 0, result.output
    from mtagent import paths
    from mtagent.session.files_store import FilesStore
    from mtagent.session.reader import read_records

    users = [r for r in read_records(FilesStore().session_infos(paths.project_hash(project))[0].path) if r.get("role") == "user"]
    assert users[0]["content"] == "summarize the diff\n"
    empty = runner.invoke(app, ["run", "--cwd", str(project), "--model", script(tmp_path, ["ok"]), "-"], input="")
    assert empty.exit_code == 2 and "the task is empty" in empty.output


def test_tool_failure_first_line_and_denial_are_shown(project, tmp_path):
    steps = [{"tool_calls": [{"tool": "read_file", "args": {"file_path": "missing.py"}},
                             {"tool": "shell", "args": {"command": "touch x"}}]}, "gave up"]
    result = runner.invoke(app, ["run", "--cwd", str(project), "--model", script(tmp_path, steps),
                                 "--approval", "deny", "look"])
    assert result.exit_code == 0, result.output
    failed = [line for line in result.stderr.splitlines() if "read_file failed:" in line]
    assert failed and "missing.py" in failed[0]
    assert any(line.startswith("denied shell:") for line in result.stderr.splitlines()), result.stderr


@pytest.mark.parametrize("key", [None, ""])
def test_missing_api_key_is_a_configuration_error_exit_2(project, key, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    if key is not None:
        monkeypatch.setenv("OPENAI_API_KEY", key)
    result = runner.invoke(app, ["run", "--cwd", str(project), "--model", "openai:gpt-4o-mini", "hi"])
    assert result.exit_code == 2 and "no API key" in result.output


def test_no_model_at_all_is_exit_2(project):
    result = runner.invoke(app, ["run", "--cwd", str(project), "hi"])
    assert result.exit_code == 2 and "no model configured" in result.output


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:  # bound, never listening: connecting is refused
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_dead_base_url_fails_at_once_naming_the_url_and_json_still_comes(project):
    url = f"http://user:hunter2@127.0.0.1:{_closed_port()}/v1"
    result = runner.invoke(app, ["run", "--cwd", str(project), "--model", "openai:gpt-4o-mini", "--base-url", url,
                                 "--json", "hi"], env={"OPENAI_API_KEY": "sk-test"})
    assert result.exit_code == 1
    assert "retry" not in result.stderr  # refused is not transient: no 3 retries with backoff
    assert "cannot reach openai:gpt-4o-mini at http://127.0.0.1:" in result.stderr
    assert "hunter2" not in result.output + result.stderr
    out = json.loads(result.stdout)  # --json: one object on stdout on a failure too
    assert out["status"] == "error" and out["exit_code"] == 1 and "cannot reach" in out["error"]
    assert out["session_id"] and out["model"] == "openai:gpt-4o-mini"  # the session it opened, to resume


def test_json_reports_a_usage_error_too(project, tmp_path):
    result = runner.invoke(app, ["run", "--cwd", str(project), "--model", script(tmp_path, ["x"]), "--window", "-5",
                                 "--json", "hi"])
    assert result.exit_code == 2
    out = json.loads(result.stdout)
    assert out["status"] == "error" and out["exit_code"] == 2 and "--window" in out["error"]


def test_piped_stdin_is_appended_to_the_task(project, tmp_path):
    result = runner.invoke(app, ["run", "--cwd", str(project), "--model", script(tmp_path, ["reviewed"]),
                                 "review this"], input="diff --git a/x b/x\n+new line\n")
    assert result.exit_code == 0, result.output
    from mtagent import paths
    from mtagent.session.files_store import FilesStore
    from mtagent.session.reader import read_records

    users = [r for r in read_records(FilesStore().session_infos(paths.project_hash(project))[0].path) if r.get("role") == "user"]
    assert users[0]["content"] == "review this\n\ndiff --git a/x b/x\n+new line\n"
