"""`mtagent run` through typer's runner with a scripted model: output, exit codes, approvals, resume; and for
scripts: --json, the task from stdin, tool failures and denials, config errors exit 2."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from interrupts import sigint_default_in_child, wait_for
from model_script import script
from typer.testing import CliRunner

from mtagent.cli.app import app
from mtagent.cli.scripted_model import load_scripted_model
from mtagent.errors import UsageError
from mtagent import paths
from mtagent.session.files_store import FilesStore
from mtagent.session.reader import read_records

runner = CliRunner()
PROJECT_FILES = {"notes.txt": "alpha\nbeta\n"}


def records(project: Path) -> list[dict]:
    sessions = FilesStore().session_infos(paths.project_hash(project))
    assert len(sessions) == 1
    return list(read_records(sessions[0].path))


def test_run_prints_the_answer_and_exits_zero(project, tmp_path):
    model = script(tmp_path, ["The answer is 42."])
    result = runner.invoke(app, ["run", "--cwd", str(project), "--model", model, "what is the answer?"])
    assert result.exit_code == 0, result.output
    assert "The answer is 42." in result.stdout
    users = [r for r in records(project) if r.get("role") == "user"]
    assert users and users[0]["content"] == "what is the answer?"


def test_run_executes_an_allowed_tool_and_records_its_result(project, tmp_path):
    model = script(tmp_path, [{"tool": "shell", "args": {"command": "cat notes.txt"}}, "Read it."])
    result = runner.invoke(app, ["run", "--cwd", str(project), "--model", model, "--approval", "allow", "read"])
    assert result.exit_code == 0, result.output
    tool = [r for r in records(project) if r.get("role") == "tool"]
    assert len(tool) == 1 and "alpha" in str(tool[0]["content"]) and tool[0]["status"] == "success"


def test_run_without_a_terminal_denies_what_needs_asking_and_says_so(project, tmp_path):
    marker = project / "ran.txt"
    model = script(tmp_path, [{"tool": "shell", "args": {"command": f"touch {marker}"}}, "ok"])
    result = runner.invoke(app, ["run", "--cwd", str(project), "--model", model, "touch it"])
    assert result.exit_code == 0, result.output
    assert not marker.exists()
    assert "no terminal to ask (stdin is not a terminal)" in result.stderr
    tool = [r for r in records(project) if r.get("role") == "tool"]
    assert "Not run" in str(tool[0]["content"]) or "denied" in str(tool[0]["content"]).lower()


def test_run_with_approval_deny_never_runs_the_command(project, tmp_path):
    marker = project / "ran.txt"
    model = script(tmp_path, [{"tool": "shell", "args": {"command": f"touch {marker}"}}, "ok"])
    result = runner.invoke(app, ["run", "--cwd", str(project), "--model", model, "--approval", "deny", "x"])
    assert result.exit_code == 0 and not marker.exists()


def test_run_model_failure_exits_one_with_one_line(project, tmp_path):
    model = script(tmp_path, [])
    result = runner.invoke(app, ["run", "--cwd", str(project), "--model", model, "anything"])
    assert result.exit_code == 1
    assert result.stderr.count("error:") == 1 and "Traceback" not in result.output


@pytest.mark.parametrize("args, needle", [
    (["--approval", "maybe"], "--approval 'maybe' is not one of ask, allow, deny"),
    (["--window", "0"], "--window must be a positive number"),
    (["--resume", "nope-1", "--continue"], "either --resume ID or --continue"),
    (["--continue"], "no session to continue"),
    (["--model", "scripted:/no/such/file.json"], "no such script file"),
])
def test_run_usage_errors_exit_two_with_one_line(project, args, needle):
    result = runner.invoke(app, ["run", "--cwd", str(project), *args, "task"])
    assert result.exit_code == 2, result.output
    assert needle in result.stderr and "Traceback" not in result.output


def test_run_empty_task_is_a_usage_error(project, tmp_path):
    result = runner.invoke(app, ["run", "--cwd", str(project), "--model", script(tmp_path, ["x"]), "  "])
    assert result.exit_code == 2 and "the task is empty" in result.stderr


def test_run_without_a_model_says_how_to_get_one(project):
    result = runner.invoke(app, ["run", "--cwd", str(project), "hello"], env={"OPENAI_API_KEY": ""})
    assert result.exit_code == 2  # a configuration error
    assert "no model configured" in result.stderr and "mtagent demo" in result.stderr


def test_continue_resumes_the_latest_session_with_its_history(project, tmp_path):
    first = script(tmp_path, ["First answer."], "one.json")
    assert runner.invoke(app, ["run", "--cwd", str(project), "--model", first, "remember: blue"]).exit_code == 0
    second = script(tmp_path, ["Second answer."], "two.json")
    result = runner.invoke(app, ["run", "--cwd", str(project), "--model", second, "--continue", "what colour?"])
    assert result.exit_code == 0, result.output
    users = [r["content"] for r in records(project) if r.get("role") == "user"]
    assert users == ["remember: blue", "what colour?"]


def test_resume_without_model_reuses_the_recorded_script(project, tmp_path):
    model = script(tmp_path, ["one", "two"])
    assert runner.invoke(app, ["run", "--cwd", str(project), "--model", model, "a"]).exit_code == 0
    sid = FilesStore().session_infos(paths.project_hash(project))[0].session_id
    result = runner.invoke(app, ["run", "--cwd", str(project), "--resume", sid, "b"])
    assert result.exit_code == 0, result.output
    assert "one" in result.stdout  # a fresh copy of the script answers again from its first step


def test_window_option_sets_the_session_window(project, tmp_path):
    model = script(tmp_path, ["ok"])
    result = runner.invoke(app, ["run", "--cwd", str(project), "--model", model, "--window", "50000", "hi"])
    assert result.exit_code == 0
    plans = [r for r in records(project) if r["type"] == "context_plan"]
    assert plans
    fixed = sum(plans[-1]["buckets"].get(b, 0) for b in ("system", "tools", "rules", "session_context", "memory"))
    spec_floor = max(50_000 - 20_000 - 13_000, int(50_000 * 0.45))  # 0.45 of the window …
    assert plans[-1]["threshold"] == max(spec_floor, fixed + int((50_000 - fixed) * 0.45))  # … or of the room beside the fixed part


def test_root_options_before_a_subcommand_are_refused(project):
    result = runner.invoke(app, ["--model", "openai:x", "sessions", "list"])
    assert result.exit_code == 2 and "put it after the command" in result.stderr


def test_root_without_a_terminal_prints_help():
    result = runner.invoke(app, [])
    assert result.exit_code == 0 and "Usage" in result.output and "run" in result.output


def test_run_help_lists_the_common_options():
    result = runner.invoke(app, ["run", "--help"])
    for option in ("--resume", "--continue", "--model", "--base-url", "--cwd", "--approval", "--window"):
        assert option in result.output


@pytest.mark.parametrize("steps, needle", [
    ({"a": 1}, "must hold a JSON list"),
    ([3], "a step must be a string"),
    ([{"tool": "x", "args": []}], "'args' must be an object"),
    ([{"nothing": 1}], "needs 'tool', 'tool_calls' or 'text'"),
])
def test_bad_script_files_are_usage_errors(tmp_path, steps, needle):
    with pytest.raises(UsageError, match=needle):
        load_scripted_model(script(tmp_path, steps, "bad.json"))


def test_script_steps_become_replies_and_tool_calls(tmp_path):
    model = load_scripted_model(script(tmp_path, [
        "hi", {"tool": "ls", "args": {"path": "."}},
        {"tool_calls": [{"tool": "ls"}, {"tool": "glob", "args": {"pattern": "*"}}], "content": "two"},
    ]))
    assert model.invoke("x").content == "hi"
    assert model.invoke("x").tool_calls[0]["name"] == "ls"
    both = model.invoke("x")
    assert [c["name"] for c in both.tool_calls] == ["ls", "glob"] and both.content == "two"
    assert model.model_name == f"scripted:{(tmp_path / 'script.json').resolve()}"


def test_run_in_a_terminal_asks_before_running_a_command(project, tmp_path, mtagent_home):
    import os
    import sys

    pexpect = pytest.importorskip("pexpect")
    marker = project / "asked.txt"
    model = script(tmp_path, [{"tool": "shell", "args": {"command": f"touch {marker}"}}, "Skipped it."])
    env = {**os.environ, "MTAGENT_HOME": str(mtagent_home), "NO_COLOR": "1"}
    child = pexpect.spawn(sys.executable, ["-m", "mtagent.cli.app", "run", "--cwd", str(project), "--model", model,
                                           "touch the file"], env=env, encoding="utf-8", timeout=90)
    try:
        child.expect(r"Run shell command `touch .*`\? \[y\]es / \[n\]o / \[a\]lways")
        child.sendline("n")
        child.expect("Skipped it.")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0 and not marker.exists()


def paused_session(project: Path, tmp_path: Path, marker: Path) -> str:
    """A session left waiting for approval of ``touch marker``; its id."""
    from mtagent.agent.session import AgentSession

    model = load_scripted_model(script(tmp_path, [{"tool": "shell", "args": {"command": f"touch {marker}"}}],
                                       "paused.json"))
    with AgentSession.create(project, model=model) as session:
        assert session.run_turn("touch it").status == "approval_required"
        return session.session_id


def test_run_resuming_a_paused_approval_without_a_terminal_denies_it_then_runs_the_task(project, tmp_path):
    marker = project / "paused.txt"
    sid = paused_session(project, tmp_path, marker)
    model = script(tmp_path, ["Skipped the touch.", "Next task done."], "next.json")
    result = runner.invoke(app, ["run", "--cwd", str(project), "--resume", sid, "--model", model, "next"])
    assert result.exit_code == 0, result.output
    assert "settling that first" in result.stderr and "no terminal to ask (stdin is not a terminal)" in result.stderr
    assert "Next task done." in result.stdout and not marker.exists()


def test_a_window_too_small_for_the_reserve_is_warned_about(project, tmp_path):
    model = script(tmp_path, ["ok"])
    result = runner.invoke(app, ["run", "--cwd", str(project), "--model", model, "--window", "12000", "hi"])
    assert result.exit_code == 0
    fires = re.search(r"auto compaction fires at ([\d,]+) tokens \((\d+)% of the window\)", result.stderr)
    assert fires, result.stderr
    # the spec's floor (45% = 5,400) or higher: the view's fixed part plus 45% of the room beside it
    assert 5_400 <= int(fires.group(1).replace(",", "")) < 12_000
    fine = runner.invoke(app, ["run", "--cwd", str(project), "--model", script(tmp_path, ["ok"], "b.json"),
                               "--window", "64000", "hi"])
    assert "auto compaction" not in fine.stderr


def test_a_small_window_without_the_threshold_floor_is_warned_to_compact_every_call(project, tmp_path, monkeypatch):
    monkeypatch.setenv("MTAGENT_CONTEXT__MIN_THRESHOLD_FRACTION", "0")
    result = runner.invoke(app, ["run", "--cwd", str(project), "--model", script(tmp_path, ["ok"]),
                                 "--window", "12000", "hi"])
    assert result.exit_code == 0
    assert "auto compaction will fire on every call" in result.stderr


def test_run_against_an_openai_compatible_server_streams_and_uses_tools(project):
    from stub_openai import StubOpenAI

    steps = [{"content": "", "tool_calls": [{"name": "read_file", "args": {"file_path": "notes.txt"}}]},
             {"content": "The notes say alpha and beta."}]
    with StubOpenAI(steps) as stub:
        result = runner.invoke(app, ["run", "--cwd", str(project), "--model", "openai:stub-model",
                                     "--base-url", stub.base_url, "summarise notes.txt"],
                               env={"OPENAI_API_KEY": "sk-test-canary-123456789"})
        bodies = list(stub.requests)
    assert result.exit_code == 0, result.output
    assert "The notes say alpha and beta." in result.stdout
    assert len(bodies) == 2 and all(b.get("stream") for b in bodies)
    assert "alpha" in json.dumps(bodies[1]["messages"])
    assert "sk-test-canary" not in json.dumps(bodies)


def test_run_auth_failure_is_one_line_and_exit_one(project):
    from stub_openai import StubOpenAI

    with StubOpenAI([{"error": 401, "code": "invalid_api_key", "message": "bad key sk-test-canary-123456789"}]) as stub:
        result = runner.invoke(app, ["run", "--cwd", str(project), "--model", "openai:stub-model",
                                     "--base-url", stub.base_url, "hi"],
                               env={"OPENAI_API_KEY": "sk-test-canary-123456789"})
    assert result.exit_code == 1
    assert result.stderr.count("error:") == 1 and "check the API key" in result.stderr
    assert "sk-test-canary" not in result.output


def test_run_interrupted_with_ctrl_c_exits_130_and_says_how_to_resume(project, tmp_path, mtagent_home):
    import os
    import sys

    pexpect = pytest.importorskip("pexpect")
    running = tmp_path / "running"  # Ctrl-C while the command runs, not while the tool forks it
    model = script(tmp_path, [{"tool": "shell", "args": {"command": f"touch {running}; sleep 60"}}, "never"])
    env = {**os.environ, "MTAGENT_HOME": str(mtagent_home), "NO_COLOR": "1"}
    child = pexpect.spawn(sys.executable, ["-m", "mtagent.cli.app", "run", "--cwd", str(project), "--model", model,
                                           "--approval", "allow", "wait"], env=env, encoding="utf-8", timeout=90,
                          preexec_fn=sigint_default_in_child)  # Ctrl-C works even if pytest ignores SIGINT
    try:
        child.expect("⏺ shell")
        wait_for(running.exists, "the shell command to start")
        child.sendintr()
        child.expect("continue with: mtagent --resume", timeout=60)
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 130


def test_resuming_a_demo_session_without_a_model_asks_for_one(project, tmp_path):
    model = script(tmp_path, ["Hello."])
    assert runner.invoke(app, ["run", "--cwd", str(project), "--model", model, "hi"]).exit_code == 0
    session = FilesStore().session_infos(paths.project_hash(project))[0]
    lines = session.path.read_text(encoding="utf-8").splitlines(keepends=True)
    first = json.loads(lines[0])
    first["model"] = "scripted:demo-policy"
    session.path.write_text(json.dumps(first) + "\n" + "".join(lines[1:]), encoding="utf-8")
    result = runner.invoke(app, ["run", "--cwd", str(project), "--resume", session.session_id, "go on"])
    assert result.exit_code == 2, result.output
    assert "demo" in result.stderr and "--model" in result.stderr and "no such script file" not in result.stderr


def test_resuming_a_corrupt_session_does_not_suggest_a_flag_run_lacks(project, tmp_path):
    model = script(tmp_path, ["Hello.", "Again."])
    assert runner.invoke(app, ["run", "--cwd", str(project), "--model", model, "hi"]).exit_code == 0
    session = FilesStore().session_infos(paths.project_hash(project))[0]
    lines = session.path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[1] = "{garbage\n"
    session.path.write_text("".join(lines), encoding="utf-8")
    result = runner.invoke(app, ["run", "--cwd", str(project), "--resume", session.session_id, "go on"])
    assert result.exit_code == 1 and "corrupt at line 2" in result.stderr
    assert "rerun with --skip-corrupt" not in result.stderr and "sessions show" in result.stderr


@pytest.mark.parametrize("flag, runs", [("allow", True), ("deny", False)])
def test_run_settles_a_paused_approval_by_the_approval_flag(project, tmp_path, flag, runs):
    marker = project / "paused.txt"
    sid = paused_session(project, tmp_path, marker)
    model = script(tmp_path, ["Settled.", "Next task done."], "next.json")
    result = runner.invoke(app, ["run", "--cwd", str(project), "--resume", sid, "--model", model,
                                 "--approval", flag, "next"])
    assert result.exit_code == 0, result.output
    assert "stdin is not a terminal" not in result.stderr
    assert marker.exists() is runs


@pytest.mark.parametrize(("approval", "reason"), [
    ("ask", "no terminal to ask (stdin is not a terminal); rerun with --approval allow to let it run"),
    ("deny", "(no one to ask)"),
])
def test_a_denial_without_a_terminal_is_said_once_and_whole(project, tmp_path, approval, reason):
    model = script(tmp_path, [{"tool": "shell", "args": {"command": "echo hi"}}, "done"])
    result = runner.invoke(app, ["run", "--cwd", str(project), "--model", model, "--approval", approval, "go"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if "denied" in line]
    assert len(lines) == 1, result.stderr  # once, not twice in different words
    assert lines[0].startswith("denied shell: ") and lines[0].endswith(reason)
    assert lines[0].count("(") == lines[0].count(")")  # never cut mid-parenthesis


def test_run_json_counts_the_model_calls_of_every_leg_after_denials(project, tmp_path):
    """Each denied approval resumes the turn (a new leg); ``model_calls`` is the whole turn's."""
    model = script(tmp_path, [{"tool": "shell", "args": {"command": "touch a"}},
                              {"tool": "shell", "args": {"command": "touch b"}}, "gave up"])
    result = runner.invoke(app, ["run", "--cwd", str(project), "--model", model, "--json", "touch both"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["status"] == "done" and data["answer"] == "gave up" and data["model_calls"] == 3
    assert result.stderr.count("no terminal to ask") == 2 and not (project / "a").exists()


# ── for scripts ──────────────────────────────────────────────────────────────────────────

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
    users = [r for r in records(project) if r.get("role") == "user"]
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
    users = [r for r in records(project) if r.get("role") == "user"]
    assert users[0]["content"] == "review this\n\ndiff --git a/x b/x\n+new line\n"
