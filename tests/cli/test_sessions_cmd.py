"""``mtagent sessions list|show|export`` through typer's runner."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from mtagent import paths
from mtagent.cli import sessions_cmd
from mtagent.cli.app import app
from mtagent.session import schema

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "transcripts"


@pytest.fixture
def project(tmp_path) -> Path:
    """A project whose history holds the golden sessions (and the v2 one's artifacts)."""
    history = paths.ensure_dir(paths.history_dir(tmp_path))
    for name in ("v2_every_record", "v1_legacy", "v2_torn_round"):
        shutil.copy(GOLDEN / f"{name}.jsonl", history / f"{name}.jsonl")
    shutil.copytree(GOLDEN / "artifacts", history / "artifacts")
    return tmp_path


def run(*args: str):
    return CliRunner().invoke(app, ["sessions", *args])


def test_list_shows_each_session_with_counts(project):
    result = run("list", "--cwd", str(project))
    assert result.exit_code == 0, result.output
    rows = {line.split("|")[1].strip(): line for line in result.stdout.splitlines()
            if line.count("|") > 5 and "v" in line.split("|")[1]}
    assert set(rows) == {"v1_legacy", "v2_every_record", "v2_torn_round"}
    cells = [c.strip() for c in rows["v2_every_record"].split("|")]
    assert (cells[4], cells[6]) == ("10", "1") and cells[5].endswith("KB")
    assert "2026-01-02 03:00" in rows["v2_every_record"]


def test_list_of_a_project_without_sessions_says_so(tmp_path):
    result = run("list", "--cwd", str(tmp_path))
    assert result.exit_code == 0 and "no sessions yet" in result.stdout


def test_show_renders_messages_calls_previews_and_compactions(project):
    result = run("show", "v2_every_record", "--cwd", str(project))
    assert result.exit_code == 0, result.output
    out = result.stdout
    for expected in ("Find the request handlers.", "→ grep(", "compact boundary cb-golden-1", "<persisted-output",
                     "microcompact (time)", "handler_1 returns 1."):
        assert expected in out, expected
    assert "def handler_399" not in out
    assert "cannot read" in result.stderr and "future_record" in result.stderr


def test_show_full_reads_tool_results_from_their_artifacts(project):
    result = run("show", "v2_every_record", "--full", "--cwd", str(project))
    assert result.exit_code == 0 and "def handler_399(request):" in result.stdout


def test_show_view_is_what_the_model_sees_on_resume(project):
    result = run("show", "v2_torn_round", "--view", "--cwd", str(project))
    assert result.exit_code == 0, result.output
    assert "interrupted: the session ended before this tool returned" in result.stdout
    assert "torn last line" in result.stderr


def test_show_full_refuses_artifact_paths_outside_the_session(project):
    history = paths.history_dir(project)
    bad = schema.message_to_record(schema.record_to_message(
        {"role": "tool", "id": "t9", "tool_call_id": "c9", "content": "x",
         "toolUseResult": {"kind": "text", "artifact": "../../../../etc/passwd"}}))
    (history / "evil.jsonl").write_bytes(schema.dumps_record(bad))
    result = run("show", "evil", "--full", "--cwd", str(project))
    assert result.exit_code == 0 and "escapes the session's artifact folder" in result.stdout
    assert "root:" not in result.stdout


def test_corrupt_middle_line_is_one_line_error_unless_skipped(project):
    path = paths.history_dir(project) / "v1_legacy.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join([*lines[:2], b"{broken\n", *lines[2:]]))
    result = run("show", "v1_legacy", "--cwd", str(project))
    assert result.exit_code == 1 and "corrupt at line 3" in result.stderr and "Traceback" not in result.output
    skipped = run("show", "v1_legacy", "--skip-corrupt", "--cwd", str(project))
    assert skipped.exit_code == 0 and "skipped corrupt line 3" in skipped.stderr


def test_export_jsonl_reproduces_the_readable_records(project):
    result = run("export", "v2_every_record", "--cwd", str(project))
    assert result.exit_code == 0, result.output
    exported = [json.loads(line) for line in result.stdout.splitlines()]
    golden = [json.loads(line) for line in (GOLDEN / "v2_every_record.jsonl").read_bytes().splitlines()]
    assert exported == [r for r in golden if r["type"] in schema.RECORD_TYPES]


def test_export_markdown_to_a_file(project, tmp_path):
    target = tmp_path / "out.md"
    result = run("export", "v2_every_record", "--format", "md", "-o", str(target), "--cwd", str(project))
    assert result.exit_code == 0, result.output
    text = target.read_text()
    assert text.startswith("# session golden-v2") and "## assistant" in text and "## compaction (manual)" in text
    assert "- tool call `grep` (call_grep_1)" in text


def test_export_accepts_markdown_as_the_name_of_md(project, tmp_path):
    short = run("export", "v2_every_record", "--format", "md", "--cwd", str(project))
    long = run("export", "v2_every_record", "--format", "markdown", "--cwd", str(project))
    assert long.exit_code == 0, long.output
    assert long.stdout == short.stdout and long.stdout.startswith("# session golden-v2")


@pytest.mark.parametrize("args", [["run", "--help"], ["sessions", "list", "--help"],
                                  ["sessions", "export", "--help"]])
def test_help_shows_no_value_placeholder_for_flags(args):
    result = run(*args[1:]) if args[0] == "sessions" else CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "--json" in result.output or "--skip-corrupt" in result.output
    assert "<bool>" not in result.output  # a flag takes no value


def test_export_to_a_missing_folder_says_it_cannot_write_there(project, tmp_path):
    target = tmp_path / "no-such-dir" / "out.md"
    result = run("export", "v2_every_record", "--format", "md", "-o", str(target), "--cwd", str(project))
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: cannot write {target}:") and ".tmp" not in result.stderr


def test_export_to_a_closed_pipe_stops_quietly(project, monkeypatch):
    class ClosedPipe:
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self) -> None:
            raise BrokenPipeError(32, "Broken pipe")

        def fileno(self) -> int:
            raise OSError("no file descriptor")

    monkeypatch.setattr(sessions_cmd, "sys", SimpleNamespace(stdout=ClosedPipe()))
    result = run("export", "v2_every_record", "--cwd", str(project))
    assert result.exit_code == 0 and "error" not in result.stderr


@pytest.mark.parametrize("args", [
    ["export", "v2_every_record", "--format", "pdf"],
    ["show", "no-such-session"],
    ["show", "../escape"],
])
def test_bad_input_exits_2_with_one_line(project, args):
    result = run(*args, "--cwd", str(project))
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error:") and len(result.stderr.strip().splitlines()) <= 2


def test_show_cuts_long_content_to_a_preview_unless_full(project):
    history = paths.history_dir(project)
    long = schema.message_to_record(schema.record_to_message({"role": "assistant", "id": "a1",
                                                              "content": "word " * 2_000 + "THE-END"}))
    (history / "long.jsonl").write_bytes(schema.dumps_record(long))
    short = run("show", "long", "--cwd", str(project))
    assert "more chars; --full shows all" in short.stdout and "THE-END" not in short.stdout
    assert "THE-END" in run("show", "long", "--full", "--cwd", str(project)).stdout


def test_list_json_is_an_array_scripts_can_read(project):
    result = run("list", "--cwd", str(project), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    by_id = {row["id"]: row for row in data}
    assert set(by_id) == {"v1_legacy", "v2_every_record", "v2_torn_round"}
    assert by_id["v2_every_record"]["messages"] == 10 and by_id["v2_every_record"]["compactions"] == 1
    assert json.loads(run("list", "--cwd", str(project / "none"), "--json").stdout) == []


def test_show_takes_a_unique_prefix_and_latest(project):
    assert "Find the request handlers." in run("show", "v2_e", "--cwd", str(project)).stdout
    ambiguous = run("show", "v2", "--cwd", str(project))
    assert ambiguous.exit_code == 2 and "matches 2 sessions" in ambiguous.output
    latest = run("show", "latest", "--cwd", str(project))
    assert latest.exit_code == 0 and "session" in latest.stdout


def test_show_prints_plans_and_events_one_line_each_and_raw_json_on_request(project):
    out = run("show", "v2_every_record", "--cwd", str(project)).stdout
    plan = [line for line in out.splitlines() if line.startswith("· plan for call")]
    event = [line for line in out.splitlines() if line.startswith("· event ")]
    assert len(plan) == 1 and len(event) == 1
    assert not any(line.lstrip().startswith(("{", '"')) for line in out.splitlines())
    assert '"type": "context_plan"' not in out and '"buckets"' not in out
    raw = run("show", "v2_every_record", "--cwd", str(project), "--raw").stdout
    records = [json.loads(line) for line in raw.splitlines() if line.startswith("{")]
    assert {r["type"] for r in records} >= {"context_plan", "event"}


def test_record_line_stays_one_bounded_line_for_hostile_events():
    from mtagent.cli.session_lines import LINE_CHARS, record_line

    rec = {"type": "event", "event": "x\nfake: line", "data": {"a": "y" * 10_000, "b": {"k": [1, 2]}, "c": "1\n2"}}
    line = record_line(rec)
    assert "\n" not in line and len(line) <= LINE_CHARS and "b=[1]" in line
