"""Every tool call shows what it does and how it ended (issue 36): pure lines, then a real terminal."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from interrupts import sigint_default_in_child
from model_script import script

from mtagent.cli.tool_lines import call_line, exit_code_of, result_lines


def test_a_shell_call_shows_its_command() -> None:
    assert call_line("shell", {"command": "python3 -c 'print(1/0)'"}, 80) == "shell(python3 -c 'print(1/0)')"


def test_a_read_shows_its_path_and_range_and_names_long_bodies_without_showing_them() -> None:
    assert call_line("read_file", {"file_path": "src/a.py", "offset": 10, "limit": 50}, 80) == \
        "read_file(src/a.py, offset=10, limit=50)"
    assert call_line("write_file", {"file_path": "a.py", "content": "x" * 5000}, 80) == "write_file(a.py, content=…)"


def test_a_server_tool_shows_its_arguments_and_the_line_is_cut_to_the_terminal() -> None:
    line = call_line("mcp__git__git_log", {"repo_path": "/repo", "max_count": 5, "query": "q" * 300}, 60)
    assert line.startswith("mcp__git__git_log(") and "max_count=5" in line
    assert len(line) == 60 and line.endswith("…")


def test_a_multi_line_command_stays_on_one_line_with_its_breaks_visible() -> None:
    line = call_line("shell", {"command": "echo hi\nrm -rf build"}, 80)
    assert "\n" not in line and "echo hi ⏎ rm -rf build" in line


def test_escape_sequences_in_arguments_are_shown_not_run() -> None:
    line = call_line("shell", {"command": "echo \x1b[2J\x1b]0;title\x07"}, 80)
    assert "\x1b" not in line and "\x07" not in line


def test_a_failed_command_shows_its_exit_code_and_the_error_first() -> None:
    out = "\n".join([f"noise {i}" for i in range(30)] + ["Traceback (most recent call last):",
                                                          "ZeroDivisionError: division by zero", "[exit code 1]"])
    lines = result_lines(out, failed=False, exit_code=1, width=120)
    assert lines[0].startswith("exit 1 · ")
    assert any("ZeroDivisionError" in line for line in lines)
    assert not any("[exit code" in line for line in lines)


def test_a_successful_result_shows_a_short_preview_and_how_much_more() -> None:
    lines = result_lines("\n".join(str(i) for i in range(1, 21)) + "\n[exit code 0]", failed=False, exit_code=0,
                         width=80)
    assert lines == ["1", "2", "3", "… +17 lines"]


def test_a_failure_shows_its_whole_reason_not_only_the_first_line() -> None:
    lines = result_lines("Error: the server failed\nreason: the token expired at 10:00", failed=True,
                         exit_code=None, width=120, tool="mcp__a__b")
    assert lines == ["mcp__a__b failed: Error: the server failed", "reason: the token expired at 10:00"]


@pytest.mark.parametrize("artifact, code", [({"kind": "shell", "exit_code": 2}, 2),
                                            ({"kind": "shell", "exit_code": 2, "timed_out": True}, None),
                                            ({"kind": "read"}, None), (None, None), ({"kind": "shell",
                                                                                      "exit_code": True}, None)])
def test_exit_code_of_reads_only_a_shell_result_s_code(artifact, code) -> None:
    assert exit_code_of(artifact) == code


def test_run_in_a_terminal_shows_the_command_its_exit_code_and_its_error(project: Path, tmp_path: Path,
                                                                          mtagent_home: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    model = script(tmp_path, [{"tool": "shell", "args": {"command": "python3 -c 'print(1/0)'"}}, "Ran it."])
    env = {**os.environ, "MTAGENT_HOME": str(mtagent_home), "TERM": "xterm", "NO_COLOR": "1", "COLUMNS": "100"}
    child = pexpect.spawn(sys.executable, ["-m", "mtagent.cli.app", "run", "--cwd", str(project), "--approval",
                                           "allow", "--model", model, "go"],
                          env=env, encoding="utf-8", timeout=90, dimensions=(40, 100),
                          preexec_fn=sigint_default_in_child)
    child.expect(pexpect.EOF)
    screen = child.before
    assert "shell(python3 -c 'print(1/0)')" in screen
    assert "exit 1 · " in screen and "ZeroDivisionError: division by zero" in screen
    assert "Ran it." in screen


def test_a_subagent_s_tool_calls_reach_the_parent_s_display_indented_and_named() -> None:
    from rich.console import Console

    from mtagent.agent.subagents.child import child_events
    from mtagent.cli.turn_display import TurnDisplay
    from mtagent.events import EventBus, EventType

    parent = EventBus()
    console = Console(record=True, width=100, force_terminal=False)
    TurnDisplay(console=console, activity=console).attach(parent)
    child = child_events(parent, "explore")
    child.emit(EventType.TOOL_STARTED, tool="grep", args={"pattern": "^class "})
    child.emit(EventType.TOOL_FINISHED, tool="grep", status="success", content="a.py:1:class A:")
    child.emit(EventType.COMPACT_STARTED, trigger="auto", tokens=10)  # the child's own business
    out = console.export_text()
    assert "  ⏺ [explore] grep(^class )" in out and "a.py:1:class A:" in out
    assert "compacting" not in out
