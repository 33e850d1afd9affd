"""End to end: the interactive `mtagent` in a pseudo-terminal, driven like a person would.

A scripted model (``--model scripted:FILE``) answers, so the run is deterministic and offline.
Every wait is bounded; the child is killed if anything hangs.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from interrupts import sigint_default_in_child, wait_for
from model_script import script

pexpect = pytest.importorskip("pexpect")

from mtagent import paths  # noqa: E402
from mtagent.session.files_store import FilesStore  # noqa: E402
from mtagent.session.reader import read_records  # noqa: E402

WAIT = 90  # seconds per step, generous for a loaded CI box; the happy path takes a few


def spawn(project: Path, replies: list, home: Path, *extra: str, name: str = "script.json",
          preexec: Callable[[], None] = sigint_default_in_child) -> pexpect.spawn:
    """``mtagent`` in ``project`` with a scripted model answering ``replies`` (written beside it as ``name``)."""
    env = {**os.environ, "MTAGENT_HOME": str(home), "PROMPT_TOOLKIT_NO_CPR": "1", "TERM": "xterm",
           "NO_COLOR": "1", "COLUMNS": "140", "LINES": "50"}
    env.pop("OPENAI_API_KEY", None)
    child = pexpect.spawn(sys.executable, ["-m", "mtagent.cli.app", "--cwd", str(project),
                                           "--model", script(project.parent, replies, name), *extra],
                          env=env, encoding="utf-8", timeout=WAIT, dimensions=(50, 140),
                          preexec_fn=preexec)  # by default Ctrl-C works even if pytest ignores SIGINT
    return child


def say(child: pexpect.spawn, line: str, *shown: str) -> None:
    """Send ``line``, wait for each of ``shown`` in turn, then for the next prompt."""
    child.sendline(line)
    for text in shown:
        child.expect(text)
    child.expect("›")


def user_lines(project: Path, session: int = 0) -> list:
    records = read_records(FilesStore().session_infos(paths.project_hash(project))[session].path)
    return [r["content"] for r in records if r.get("role") == "user"]


def test_repl_message_context_approval_multiline_and_exit(project, mtagent_home):
    marker = project / "approved.txt"
    child = spawn(project, ["Hello from the scripted model.",
                            {"tool": "shell", "args": {"command": f"echo ok > {marker}"}},
                            "The command ran.", "Got two lines."], mtagent_home)
    try:
        child.expect("/help for commands")
        child.expect("›")
        say(child, "hello", "Hello from the scripted model")
        say(child, "/context", "Context usage", "Free space")
        say(child, "/contxt", "did you mean /context")
        child.sendline("please run it")
        child.expect(r"Run shell command `echo ok > .*`\? \[y\]es / \[n\]o / \[a\]lways")
        say(child, "y", "The command ran")
        child.send("first line\\\r")
        child.send("second line\r")
        child.expect("Got two lines")
        child.expect("›")

        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, child.before
    assert marker.read_text().strip() == "ok"
    assert user_lines(project) == ["hello", "please run it", "first line\nsecond line"]
    assert (mtagent_home / "repl_history").read_text(encoding="utf-8").count("/context") >= 1


def _sigint_ignored() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as `bash -c 'mtagent & wait'` starts it


@pytest.mark.parametrize("started", ["plainly", "with SIGINT ignored"])
def test_ctrl_c_stops_a_running_tool_and_returns_to_the_prompt(tmp_path, project, mtagent_home, started):
    """The user typing at the REPL gets Ctrl-C even when whatever started it ignored SIGINT."""
    running = tmp_path / "running"  # Ctrl-C while the command runs, not while the tool forks it
    preexec = _sigint_ignored if started == "with SIGINT ignored" else sigint_default_in_child
    child = spawn(project, [{"tool": "shell", "args": {"command": f"touch {running}; sleep 60"}}, "Still here."],
                  mtagent_home, "--approval", "allow", preexec=preexec)
    try:
        child.expect("›")
        child.sendline("wait a minute")
        child.expect("⏺ shell")
        wait_for(running.exists, "the shell command to start")
        child.sendintr()
        child.expect("interrupted", timeout=60)
        child.expect("›")
        say(child, "go on", "Still here")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    records = list(read_records(FilesStore().session_infos(paths.project_hash(project))[0].path))
    tool = [r for r in records if r.get("role") == "tool"]
    assert len(tool) == 1 and "interrupt" in str(tool[0]["content"]).lower()
    assert user_lines(project) == ["wait a minute", "go on"]


def test_repl_cost_compact_and_clear_in_a_terminal(project, mtagent_home):
    child = spawn(project, ["First answer.", "Second answer."], mtagent_home)
    try:
        child.expect("›")
        say(child, "hello", "First answer")
        say(child, "/cost", "cache reads", "cache writes")
        say(child, "/compact", "nothing (to )?compact")  # one short exchange: nothing changes, and it says why
        say(child, "/clear", "new session")
        say(child, "after clear", "First answer")  # the new session's scripted model starts its script again
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert len(FilesStore().session_infos(paths.project_hash(project))) == 2  # each got a message


def test_a_refused_compact_stops_its_spinner(project, mtagent_home):
    """``/compact`` in a young session says "nothing compacted"; its spinner must stop with it,
    not redraw over the idle prompt (it once ran on forever: a refusal sent no end signal)."""
    child = spawn(project, ["First answer."], mtagent_home)
    try:
        child.expect("›")
        say(child, "hello", "First answer")
        say(child, "/compact", "nothing (to )?compact")
        # a live spinner redraws every ~0.1 s; three seconds of silence means it stopped
        seen = child.expect([r"compacting", pexpect.TIMEOUT], timeout=3)
        assert seen == 1, f"the spinner still redraws after the refusal: {child.before!r}"
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)


def _a_session(project: Path, home: Path) -> str:
    child = spawn(project, ["First answer."], home, name="first.json")
    try:
        child.expect("›")
        say(child, "hello", "First answer")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    return FilesStore().session_infos(paths.project_hash(project))[-1].session_id


def test_resume_draws_its_prompt_before_the_session_is_loaded(project, mtagent_home):
    """--resume reaches its prompt as a new session does: the load happens behind it (issue 36)."""
    sid = _a_session(project, mtagent_home)
    child = spawn(project, ["Second answer."], mtagent_home, "--resume", "latest", name="second.json")
    try:
        child.expect("resuming")  # the header names the session (the line may wrap on a long script path)
        child.expect("›")
        prompt_at = len(child.before)
        child.expect(rf"session {sid} \(resumed\)")  # the banner comes after the prompt, once loaded
        assert prompt_at >= 0
        say(child, "and again", "Second answer")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert user_lines(project, -1) == ["hello", "and again"]


def test_resume_of_a_session_another_repl_holds_is_refused_before_loading(project, mtagent_home):
    sid = _a_session(project, mtagent_home)
    holder = spawn(project, ["Holding."], mtagent_home, "--resume", sid, name="hold.json")
    try:
        holder.expect(rf"session {sid} \(resumed\)")
        second = spawn(project, ["Holding."], mtagent_home, "--resume", sid, name="hold2.json")
        try:
            second.expect(pexpect.EOF, timeout=30)
            out = second.before
        finally:
            second.close(force=True)
        assert second.exitstatus == 1 or second.exitstatus == 2, (second.exitstatus, out)
        assert f"session {sid} is in use by pid {holder.pid}" in out
        assert "starting…" not in out  # refused before the prompt and the load
    finally:
        holder.sendeof()
        holder.expect(pexpect.EOF)
        holder.close(force=True)
