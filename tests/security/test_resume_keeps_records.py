"""Resume never deletes a complete record (issue #13): only a last line WITHOUT its newline is torn."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtagent.agent.scripted import ScriptedChatModel
from mtagent.agent.session import AgentSession
from mtagent.config import Settings
from mtagent.session.reader import ReadReport, iter_entries
from mtagent.session.transcript import find_torn_tail

BAD_COMPLETE_LINES = [
    b'{"type": "transcript_message", "text": "\xff\xfe"}\n',  # invalid UTF-8
    b"[" * 50_000 + b"]" * 50_000 + b"\n",  # nested past the recursion limit
    b"not json at all\n",
    b"\n",
]


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
