"""Every printer of untrusted text, fed random bytes with escape, control and bidi sequences (#27).

Property: whatever a model, a tool, a transcript or a repository wrote, no raw ESC, C0 (other
than newline/tab), DEL, C1 or bidi control reaches the terminal — from ``mtagent recall`` (hits,
``--ref``, ``--json``), ``/recall``, ``mtagent memory list`` (text and ``--json``), ``/memory list``,
the streamed answer, the approval question, error lines and any rich renderable on the CLI's
consoles. The check is written here, apart from the sanitizer it tests.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table
from rich.text import Text
from transcripts import write_exchange
from typer.testing import CliRunner

from mtagent.cli import run_cmd
from mtagent.cli.app import app
from mtagent.cli.output import SafeConsole, print_error
from mtagent.cli.recall_cmd import print_recall
from mtagent.cli.slash import SlashCommand, cmd_memory, error_line
from mtagent.cli.turn_display import TurnDisplay, make_approver
from mtagent.context.static import memory
from mtagent.errors import MTAgentError

RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
FRAGMENTS = ["\x1b[8m", "\x1b[0m", "\x1b[1G\x1b[2K", "\x1b]0;title\x07", "\x1b]52;c;Y3VybA==\x07", "\x1b[2J",
             "\x9b31m", "\x9d0;t\x9c", "\x1bP+q\x1b\\", "\u202e", "\u2066", "\u2069", "\u200f", "\r", "\r\n", "\x08",
             "\x00", "\x7f", "\x85", "\n", "\t", "word", " ", "[bold]", "[/]", "ü", "漢"]
hostile = st.lists(st.one_of(st.sampled_from(FRAGMENTS),
                             st.binary(max_size=12).map(lambda b: b.decode("latin-1")),
                             st.text(st.characters(max_codepoint=0x206f, exclude_categories=("Cs",)), max_size=8)),
                   min_size=1, max_size=12).map("".join)
FEW = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
runner = CliRunner()


def assert_clean(output: str, where: str) -> None:
    found = RAW.findall(output)
    assert not found, f"{where} emitted raw control characters {found!r}: {output!r}"


def plain_console() -> tuple[Console, io.StringIO]:
    """A console like a test's (not the CLI's own): only the printer's own sanitizing can help."""
    out = io.StringIO()
    return Console(file=out, width=120, force_terminal=False, color_system=None), out


def _transcript(root: Path, text: str) -> None:
    write_exchange(root, f"needle {text}", "shell", {"command": text}, f"needle output {text}")


def _saved_fact(tmp_path_factory: pytest.TempPathFactory, text: str) -> Path:
    """A project whose one project fact is ``text`` (an example the store refuses is no example)."""
    root = tmp_path_factory.mktemp("p")
    assume(text.strip())
    try:
        memory.save_memory(text, "project", root)
    except MTAgentError:
        assume(False)
    return root


# ── printers fed directly (fast: many examples) ─────────────────────────────────────────

@FEW
@given(text=hostile, cut=st.integers(min_value=0, max_value=40))
def test_streamed_answer_never_emits_controls(text, cut):
    console, out = plain_console()
    display = TurnDisplay(console=console, activity=console, spinner=False)
    for piece in (text[:cut], text[cut:]):  # a sequence split across two streamed pieces
        display.on_token(piece)
    display.end_text()
    assert_clean(out.getvalue(), "the streamed answer")
    assert display.take_streamed() == text  # what the session keeps is the exact text


@FEW
@given(command=hostile, tool=hostile)
def test_approval_question_never_emits_controls(command, tool, capsys):
    asked: list[str] = []
    approve = make_approver(SafeConsole(file=io.StringIO()), lambda q: (asked.append(q), "n")[1])
    requests = [SimpleNamespace(tool="shell", args={"command": command}, tool_call_id="1", rule=""),
                SimpleNamespace(tool=tool, args={"path": command}, tool_call_id="2", rule=f"subagent {tool}: x")]
    approve(requests)
    for question in asked:
        assert_clean(question, "the approval question")
    monkey_stdin = io.StringIO("y\n")
    real = run_cmd.sys.stdin
    run_cmd.sys.stdin = monkey_stdin
    try:
        run_cmd._read_stdin_line(f"Run shell command `{command}`? ")
    finally:
        run_cmd.sys.stdin = real
    assert_clean(capsys.readouterr().err, "run's approval prompt")


@FEW
@given(text=hostile)
def test_error_lines_and_safe_console_never_emit_controls(text, capsys):
    console, out = plain_console()
    error_line(console, text)
    print_error(text)
    assert_clean(out.getvalue(), "/command error line")
    assert_clean(capsys.readouterr().err, "error: line")
    safe_out = io.StringIO()
    safe = SafeConsole(file=safe_out, width=80, force_terminal=True, color_system="truecolor")
    table = Table(title=Text(text))
    table.add_column(Text(text))
    table.add_row(Text(text, style="bold"))
    safe.print(text, markup=False)
    safe.print(table)
    safe.print(Text(text), style="red")
    # a colour terminal gets style codes (ESC [ … m) from rich itself: only those may appear
    assert_clean(re.sub(r"\x1b\[[0-9;]*m", "", safe_out.getvalue()), "SafeConsole")


@FEW
@given(text=hostile)
def test_slash_memory_list_never_emits_controls(text, tmp_path_factory):
    root = _saved_fact(tmp_path_factory, text)
    console, out = plain_console()
    host = SimpleNamespace(console=console, cwd=root)
    cmd_memory(host, SlashCommand(name="memory", rest="list --project"))
    cmd_memory(host, SlashCommand(name="memory", rest="remove --project 1"))
    assert_clean(out.getvalue(), "/memory")


# ── whole commands (slower: fewer examples) ──────────────────────────────────────────────

@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=hostile)
def test_memory_list_never_emits_controls(text, tmp_path_factory):
    root = _saved_fact(tmp_path_factory, text)
    shown = runner.invoke(app, ["memory", "list", "--project", "--cwd", str(root)])
    assert shown.exit_code == 0, shown.output
    assert_clean(shown.output, "memory list")
    as_json = runner.invoke(app, ["memory", "list", "--project", "--json", "--cwd", str(root)])
    assert_clean(as_json.output, "memory list --json")
    assert json.loads(as_json.output)[0]["text"] == memory.list_memories("project", root)[0].text


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=hostile)
def test_recall_never_emits_controls(text, tmp_path_factory):
    root = tmp_path_factory.mktemp("p")
    _transcript(root, text)
    for args in (["recall", "needle"], ["recall", "needle", "--json"], ["recall", "--ref", "msg:s1:u1"],
                 ["recall", "--ref", "msg:s1:t1", "--json"]):
        result = runner.invoke(app, [*args, "--cwd", str(root)])
        assert result.exit_code == 0, result.output
        assert_clean(result.output, " ".join(args))
    console, out = plain_console()
    print_recall(console, root, "needle")
    print_recall(console, root, "--ref msg:s1:u1")
    assert_clean(out.getvalue(), "/recall")


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=hostile)
def test_sessions_show_and_list_never_emit_controls(text, tmp_path_factory):
    root = tmp_path_factory.mktemp("p")
    _transcript(root, text)
    for args in (["sessions", "list"], ["sessions", "list", "--json"], ["sessions", "show", "s1"],
                 ["sessions", "show", "s1", "--full"], ["sessions", "show", "s1", "--view"],
                 ["sessions", "export", "s1", "--format", "md"]):
        result = runner.invoke(app, [*args, "--cwd", str(root)])
        assert result.exit_code == 0, (args, result.output)
        assert_clean(result.output, " ".join(args))


# ── the known attacks, pinned (fail on the code before #27) ─────────────────────────────

ATTACK = "fact \x1b]0;owned\x07\x1b[2J\x1b]52;c;Y3VybA==\x07\u202eexe.txt \x9b31m"


def test_memory_list_shows_a_hostile_fact_visibly(tmp_path):
    memory.save_memory(ATTACK, "project", tmp_path)
    for args in (["memory", "list"], ["memory", "list", "--json"]):
        result = runner.invoke(app, [*args, "--cwd", str(tmp_path)])
        assert result.exit_code == 0, result.output
        assert_clean(result.output, " ".join(args))
    assert "\\x1b]52;c;" in runner.invoke(app, ["memory", "list", "--cwd", str(tmp_path)]).output


@pytest.mark.parametrize("args", [["recall", "needle"], ["recall", "--ref", "msg:s1:u1"],
                                  ["recall", "needle", "--json"]])
def test_recall_shows_hostile_transcript_text_visibly(tmp_path, args):
    _transcript(tmp_path, ATTACK)
    result = runner.invoke(app, [*args, "--cwd", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert_clean(result.output, " ".join(args))


def test_slash_recall_ref_shows_hostile_text_visibly(tmp_path):
    _transcript(tmp_path, ATTACK)
    console, out = plain_console()
    print_recall(console, tmp_path, "--ref msg:s1:u1")
    print_recall(console, tmp_path, "needle")
    assert "\\x1b]0;owned" in out.getvalue()
    assert_clean(out.getvalue(), "/recall")


# ── keys are text too (#33: the suite stayed green with a sanitizer that cleaned values only) ──

KEY_ATTACK = "\x9b2J\u202ecod\x1b]0;owned\x07"


def test_a_records_keys_are_cleaned_like_its_values() -> None:
    from mtagent.terminal_text import sanitize_deep

    record = {KEY_ATTACK: {KEY_ATTACK: [{KEY_ATTACK: KEY_ATTACK}]}}
    cleaned = sanitize_deep(record)
    assert_clean(json.dumps(cleaned, ensure_ascii=False), "sanitize_deep")
    [key] = cleaned
    assert key == "\\x9b2J\\u202ecod\\x1b]0;owned\\x07"  # shown, not dropped


@pytest.mark.parametrize("args", [["sessions", "show", "s1"], ["sessions", "show", "s1", "--full"],
                                  ["sessions", "export", "s1", "--format", "md"]])
def test_a_tool_calls_argument_name_is_shown_visibly(tmp_path, args):
    """A model names a tool argument with a C1 CSI and a bidi override: JSON keeps both raw."""
    write_exchange(tmp_path, "hi", "shell", {KEY_ATTACK: "ls"}, "done")
    result = runner.invoke(app, [*args, "--cwd", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert_clean(result.output, " ".join(args))
    assert "\\u202ecod" in result.output
