"""Resume never deletes a complete record (issue #13): only a last line WITHOUT its newline is torn.
From the command line (``mtagent run --resume`` and the interactive ``mtagent --resume``) a complete record
it cannot read stops the resume with one line that names the line, says every record was kept and what to
do — no traceback."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from model_script import script
from typer.testing import CliRunner

from mtagent import paths
from mtagent.agent.scripted import ScriptedChatModel
from mtagent.agent.session import AgentSession
from mtagent.cli.app import app
from mtagent.config import Settings
from mtagent.session.files_store import FilesStore
from mtagent.session.reader import ReadReport, iter_entries
from mtagent.session.transcript import find_torn_tail

BAD_COMPLETE_LINES = [
    b'{"type": "transcript_message", "text": "\xff\xfe"}\n',  # invalid UTF-8
    b"[" * 50_000 + b"]" * 50_000 + b"\n",  # nested past the recursion limit
    b"not json at all\n",
    b"\n",
]
BAD_LAST_RECORDS = {
    "utf8": b'{"type": "transcript_message", "role": "user", "id": "m9", "content": "\xff\xfe"}\n',
    "deep": b"[" * 10_000 + b"]" * 10_000 + b"\n",
}
runner = CliRunner()


def _settings() -> Settings:
    return Settings.model_validate({"agent": {"retry_base_seconds": 0.0}, "session_memory": {"enabled": False}})


def _session(project: Path) -> tuple[str, Path]:
    with AgentSession.create(project, model=ScriptedChatModel(["first answer"]), settings=_settings()) as s:
        s.run_turn("hello")
        return s.session_id, s.transcript_path


@pytest.mark.parametrize("bad", BAD_COMPLETE_LINES, ids=["utf8", "deep", "text", "blank"])
def test_resume_keeps_a_complete_unparsable_last_line_and_reports_it(project: Path, bad: bytes) -> None:
    sid, path = _session(project)
    with path.open("ab") as fh:
        fh.write(bad)
    before = path.read_bytes()
    assert find_torn_tail(path) is None  # newline-terminated: not torn
    report = ReadReport()
    list(iter_entries(path, skip_corrupt=True, report=report))
    assert report.torn_tail_offset is None and report.skipped_corrupt == 1
    with AgentSession.resume(sid, project, model=ScriptedChatModel(["second answer"]), settings=_settings(),
                             skip_corrupt=True) as s:
        s.run_turn("again")
    after = path.read_bytes()
    assert after.startswith(before), "resume changed or deleted a complete record"


def test_a_last_line_without_its_newline_is_torn_and_repaired(project: Path) -> None:
    sid, path = _session(project)
    before = path.read_bytes()
    with path.open("ab") as fh:
        fh.write(b'{"type": "transcript_mess')
    assert find_torn_tail(path) == len(before)
    with AgentSession.resume(sid, project, model=ScriptedChatModel(["second"]), settings=_settings()) as s:
        s.run_turn("again")
    after = path.read_bytes()
    assert after.startswith(before) and b'"transcript_mess\n' not in after and b'transcript_mess{' not in after


def _session_with_bad_last_record(project: Path, tmp_path: Path, bad: bytes) -> tuple[str, str, Path]:
    model = script(tmp_path, ["first answer", "second answer"])
    first = runner.invoke(app, ["run", "--cwd", str(project), "--model", model, "hello"])
    assert first.exit_code == 0, first.output
    session = FilesStore().session_infos(paths.project_hash(project))[0]
    with session.path.open("ab") as fh:
        fh.write(bad)
    return model, session.session_id, session.path


def _says_kept(text: str, line: int) -> bool:
    return f"corrupt at line {line}" in text and "Nothing was changed or deleted" in text \
        and "every record is kept" in text and "Traceback" not in text


@pytest.mark.parametrize("kind", BAD_LAST_RECORDS)
def test_run_resume_keeps_the_record_and_says_so(project: Path, tmp_path: Path, kind: str) -> None:
    model, sid, path = _session_with_bad_last_record(project, tmp_path, BAD_LAST_RECORDS[kind])
    before = path.read_bytes()
    line = before.count(b"\n")
    result = runner.invoke(app, ["run", "--cwd", str(project), "--model", model, "--resume", sid, "go on"])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert _says_kept(result.stderr.replace("\n", " "), line), result.stderr
    assert path.read_bytes() == before, "resume changed the transcript"
    shown = runner.invoke(app, ["sessions", "show", sid, "--cwd", str(project), "--skip-corrupt"])
    assert shown.exit_code == 0 and "first answer" in shown.output and f"line {line}" in shown.stderr


@pytest.mark.parametrize("kind", BAD_LAST_RECORDS)
def test_the_interactive_resume_keeps_the_record_and_says_so(project: Path, tmp_path: Path, mtagent_home: Path,
                                                             kind: str) -> None:
    pexpect = pytest.importorskip("pexpect")
    model, sid, path = _session_with_bad_last_record(project, tmp_path, BAD_LAST_RECORDS[kind])
    before = path.read_bytes()
    env = {**os.environ, "MTAGENT_HOME": str(mtagent_home), "PROMPT_TOOLKIT_NO_CPR": "1", "TERM": "xterm",
           "NO_COLOR": "1", "COLUMNS": "400", "LINES": "50"}
    child = pexpect.spawn(sys.executable, ["-m", "mtagent.cli.app", "--cwd", str(project), "--model", model,
                                           "--resume", sid],
                          env=env, encoding="utf-8", timeout=90, dimensions=(50, 400))
    try:
        child.expect(pexpect.EOF)
        output = child.before
    finally:
        child.close(force=True)
    assert child.exitstatus == 1, output
    assert _says_kept(" ".join(output.split()), before.count(b"\n")), output
    assert path.read_bytes() == before, "the interactive resume changed the transcript"
