"""Text from a model, a tool, a transcript or a repository never drives the terminal (#27).

Each test plants escape sequences (conceal, cursor moves, erase line, window title, clear screen,
OSC 52 clipboard), C1 controls and bidi overrides where a printer picks them up, and checks the
bytes that reach the terminal: the sequence is shown as text (``\\x1b[8m``, ``\\u202e``), never
emitted.
"""

from __future__ import annotations

import json
import os
import sys

import pytest
from model_script import script
from typer.testing import CliRunner

from mtagent.cli.app import app
from mtagent.terminal_text import json_text, terminal_safe

runner = CliRunner()
CONCEAL = "ls \x1b[8m; touch PWNED\x1b[0m"
REWRITE = "touch PWNED #\x1b[1G\x1b[2KRun shell command `ls`"
HOSTILE_ANSWER = ("done\x1b]0;owned-title\x07\x1b[2J\x1b]52;c;Y3VybCBldmlsfHNo\x07"
                  "\x9b31m\u202eexe.txt\u2066 \x1bP+q\x1b\\")
RAW_BYTES = ("\x1b", "\x07", "\x9b", "\u202e", "\u2066", "\x90")


def raw_control(output: str) -> list[str]:
    return [seq for seq in RAW_BYTES if seq in output]


# ── the sanitizer itself ─────────────────────────────────────────────────────────────────

def test_terminal_safe_shows_escapes_c1_and_bidi_controls_visibly():
    shown = terminal_safe("a\x1b[2Jb\x9b1mc\u202ed\u2067e\x7ff\r\ng\rh\ti\nj")
    assert shown == "a\\x1b[2Jb\\x9b1mc\\u202ed\\u2067e\\x7ff\ng\\x0dh\ti\nj"
    assert terminal_safe(shown) == shown


def test_json_text_escapes_what_a_terminal_would_run_and_keeps_the_value():
    value = {"answer": "x\x9b2J\u202e\x1b]0;t\x07\u2028y"}
    text = json_text(value)
    assert not raw_control(text) and "\u2028" not in text
    assert json.loads(text) == value


# ── the approval question of an interactive `mtagent run` ───────────────────────────────

@pytest.mark.parametrize("command", [CONCEAL, REWRITE], ids=["conceal", "rewrite-line"])
def test_run_approval_question_shows_the_whole_command(project, tmp_path, mtagent_home, command):
    pexpect = pytest.importorskip("pexpect")
    model = script(tmp_path, [{"tool": "shell", "args": {"command": command}}, "Skipped it."])
    env = {**os.environ, "MTAGENT_HOME": str(mtagent_home), "NO_COLOR": "1", "TERM": "xterm"}
    env.pop("OPENAI_API_KEY", None)
    child = pexpect.spawn(sys.executable, ["-m", "mtagent.cli.app", "run", "--cwd", str(project), "--model", model,
                                           "list the files"], env=env, encoding="utf-8", timeout=90,
                          cwd=str(project), dimensions=(50, 200))
    try:
        child.expect(r"\[y\]es / \[n\]o / \[a\]lways")
        question = child.before
        child.sendline("n")
        child.expect("Skipped it.")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    asked = question[question.find("Run shell command"):] if "Run shell command" in question else question
    assert "\x1b[8m" not in question and "\x1b[1G" not in question and "\x1b[2K" not in question, question
    assert "touch PWNED" in asked and "\\x1b[" in asked, asked  # the hidden part is shown
    assert not (project / "PWNED").exists()


# ── `mtagent run`'s answer, JSON and tool trouble ─────────────────────────────────────────

def test_run_final_answer_cannot_retitle_clear_or_write_the_clipboard(project, tmp_path):
    result = runner.invoke(app, ["run", "--cwd", str(project), "--model", script(tmp_path, [HOSTILE_ANSWER]), "hi"])
    assert result.exit_code == 0, result.output
    assert not raw_control(result.output), repr(result.output)
    assert "\\x1b]52;c;" in result.output and "\\u202e" in result.output


def test_run_json_answer_has_no_raw_c1_or_bidi(project, tmp_path):
    result = runner.invoke(app, ["run", "--json", "--cwd", str(project), "--model",
                                 script(tmp_path, [HOSTILE_ANSWER]), "hi"])
    assert result.exit_code == 0, result.output
    line = result.stdout.strip().splitlines()[-1]
    assert not raw_control(line), repr(line)
    assert json.loads(line)["answer"] == HOSTILE_ANSWER  # scripts still get the exact text


def test_run_failed_tool_line_shows_escapes(project, tmp_path):
    steps = [{"tool": "nope\x1b]0;tool-title\x07\u202e", "args": {"x": "\x1b[2J"}}, "ok"]
    result = runner.invoke(app, ["run", "--approval", "allow", "--cwd", str(project), "--model",
                                 script(tmp_path, steps), "hi"])
    assert "failed" in result.output, result.output
    assert not raw_control(result.output), repr(result.output)
