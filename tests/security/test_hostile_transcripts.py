"""Hostile transcripts through every reader (issue #13): no traceback, no byte changed by a reader,
no complete record deleted by resume, no terminal escape printed raw, bounded --full output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from mtagent.agent.scripted import ScriptedChatModel
from mtagent.agent.session import AgentSession
from mtagent.cli.app import app
from mtagent.config import Settings
from mtagent.errors import MTAgentError
from mtagent.session.transcript import find_torn_tail

ESCAPES = ["\x1b]0;pwned-title\x07", "\x1b[2J\x1b[H", "\x9b31m", "\x1b]52;c;ZXZpbA==\x07", "\x07\x08\x7f"]


def _settings() -> Settings:
    return Settings.model_validate({"agent": {"retry_base_seconds": 0.0}, "session_memory": {"enabled": False}})


@pytest.fixture(scope="module")
def base_session(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    """One real recorded session (records of every common kind), its bytes reused by each example."""
    home = tmp_path_factory.mktemp("home")
    project = tmp_path_factory.mktemp("proj")
    (project / "a.txt").write_text("hello " + "".join(ESCAPES) + "\n")
    import os

    old = os.environ.get("MTAGENT_HOME")
    os.environ["MTAGENT_HOME"] = str(home)
    try:
        from mtagent.agent.scripted import tool_call

        model = ScriptedChatModel([tool_call("read_file", {"file_path": "a.txt"}, id="r1"),
                                   "done " + "".join(ESCAPES)])
        with AgentSession.create(project, model=model, settings=_settings()) as s:
            s.run_turn("read a.txt " + ESCAPES[0])
            data = s.transcript_path.read_bytes()
    finally:
        if old is None:
            os.environ.pop("MTAGENT_HOME", None)
        else:
            os.environ["MTAGENT_HOME"] = old
    return project, data


def _install(project_src: Path, data: bytes, tmp_path: Path) -> tuple[Path, str, Path]:
    project = tmp_path / "p"
    if project.exists():
        shutil.rmtree(project)
    shutil.copytree(project_src, project)
    with AgentSession.create(project, model=ScriptedChatModel([]), settings=_settings()) as s:
        sid, path = s.session_id, s.transcript_path
    path.write_bytes(data)
    return project, sid, path


def _check_clean(result, what: str, *, terminal: bool = True) -> None:
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"{what}: {type(result.exception).__name__}: {result.exception}") from result.exception
    assert "Traceback" not in result.output, what
    assert result.exit_code in (0, 1, 2), (what, result.exit_code)
    for seq in ("\x1b", "\x9b", "\x07") if terminal else ():
        assert seq not in result.output, (what, "raw terminal control in output")


JUNK_LINES = st.one_of(
    st.binary(max_size=200).map(lambda b: b.replace(b"\n", b"")),
    st.just(b"[" * 5000 + b"]" * 5000),
    st.just(b'{"type": "transcript_message", "role": "user", "content": "\xff\xfe"}'),
    st.just(b'{"type": "transcript_message", "schema_version": 2, "role": 7, "content": ["x", 5]}'),
    st.just(b'{"type": "context_plan", "usage": ' + b"1" + b"0" * 400 + b"}"),
    st.builds(lambda t: json.dumps({"type": "transcript_message", "schema_version": 2, "role": "assistant",
                                    "id": "x", "content": t, "tool_calls": [{"id": 5, "name": None}]}).encode(),
              st.text(max_size=50)),
    st.sampled_from([e.encode() for e in ESCAPES]),
)


@settings(max_examples=6, deadline=None, phases=[Phase.explicit, Phase.generate], suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(junk=st.lists(st.tuples(st.integers(0, 1000), JUNK_LINES), max_size=3), torn=st.booleans())
def test_fuzzed_transcripts_through_every_reader(base_session, tmp_path: Path, junk, torn: bool) -> None:
    project_src, base = base_session
    lines = base.split(b"\n")[:-1]
    for where, line in junk:
        lines.insert(where % (len(lines) + 1), line)
    data = b"\n".join(lines) + b"\n" + (b'{"type": "transcript_mess' if torn else b"")
    project, sid, path = _install(project_src, data, tmp_path)
    runner = CliRunner()
    for args in (["list"], ["show", sid], ["show", sid, "--full"], ["show", sid, "--raw"], ["show", sid, "--view"],
                 ["show", sid, "--skip-corrupt"], ["show", sid, "--view", "--skip-corrupt"],
                 ["show", sid, "--full", "--skip-corrupt"], ["export", sid, "--skip-corrupt"],
                 ["export", sid, "--format", "md", "--skip-corrupt"], ["export", sid]):
        result = runner.invoke(app, ["sessions", *args, "--cwd", str(project)])
        _check_clean(result, " ".join(args), terminal=not (args[0] == "export" and "md" not in args))
        assert path.read_bytes() == data, f"sessions {' '.join(args)} changed the transcript"
    replayed = runner.invoke(app, ["replay", str(path), "-s", "raw", "-s", "mtagent"])
    _check_clean(replayed, "replay")
    assert path.read_bytes() == data
    complete = data[: find_torn_tail(path)] if torn else data
    try:
        with AgentSession.resume(sid, project, model=ScriptedChatModel(["ok"]), settings=_settings(),
                                 skip_corrupt=True) as s:
            s.run_turn("continue")
    except MTAgentError:
        pass  # a clear, typed refusal is fine; what matters is that nothing was deleted
    assert path.read_bytes().startswith(complete), "resume deleted or changed a complete record"


def test_show_and_markdown_export_never_print_terminal_escapes(base_session, tmp_path: Path) -> None:
    project_src, base = base_session
    project, sid, _ = _install(project_src, base, tmp_path)
    runner = CliRunner()
    for args in (["show", sid], ["show", sid, "--full"], ["show", sid, "--raw"], ["show", sid, "--view"],
                 ["export", sid, "--format", "md"]):
        result = runner.invoke(app, ["sessions", *args, "--cwd", str(project)])
        assert result.exit_code == 0, result.output
        assert "\x1b" not in result.output and "\x07" not in result.output and "\x9b" not in result.output
        assert "\\x1b]0;pwned-title" in result.output  # shown as text, not run
    exported = runner.invoke(app, ["sessions", "export", sid, "--cwd", str(project)])
    assert exported.output.encode() == base  # jsonl export: the records' own bytes


def test_show_full_caps_a_huge_line(base_session, tmp_path: Path) -> None:
    project_src, base = base_session
    huge = json.dumps({"type": "transcript_message", "schema_version": 2, "role": "user", "id": "big",
                       "timestamp": "2026-01-01T00:00:00Z", "content": "y" * (20 * 1024 * 1024)}).encode()
    project, sid, _ = _install(project_src, base + huge + b"\n", tmp_path)
    result = CliRunner().invoke(app, ["sessions", "show", sid, "--full", "--cwd", str(project)])
    assert result.exit_code == 0, result.output[-500:]
    assert len(result.output) < 2 * 1024 * 1024 and "sessions export` writes everything" in result.output
