"""`mtagent demo` through the CLI runner: what it prints, and that its transcript reads back."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import mtagent
from mtagent.cli.app import app
from mtagent.cli.session_report import read_session_report
from mtagent.context.view import load_session
from mtagent import paths
from mtagent.session.files_store import FilesStore

runner = CliRunner()
# A real, stable code base that is always installed and big enough for the 16K demo window.
DEMO_SOURCE = Path(mtagent.__file__).resolve().parent / "context"


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory):
    home = tmp_path_factory.mktemp("demo-home")
    mp = pytest.MonkeyPatch()
    mp.setenv("MTAGENT_HOME", str(home))
    try:
        result = runner.invoke(app, ["demo", "--cwd", str(DEMO_SOURCE)], catch_exceptions=False)
        sessions = FilesStore().session_infos(paths.project_hash(DEMO_SOURCE))
        yield result, sessions, home
    finally:
        mp.undo()


def test_demo_prints_persisted_results_compactions_and_the_grid(demo_run):
    result, _, _ = demo_run
    assert result.exit_code == 0, result.output
    out = result.output
    assert "scripted policy" in out and "not a model" in out
    persisted = re.search(r"Persisted tool results: (\d+)", out)
    assert persisted and int(persisted.group(1)) >= 1
    compactions = re.search(r"Compactions: (\d+)", out)
    assert compactions and int(compactions.group(1)) >= 1
    before_after = re.search(r"[│|]\s*\w+\s*[│|]\s*([\d,]+) tokens\s*[│|]\s*([\d,]+) tokens", out)
    assert before_after, out
    before, after = (int(x.replace(",", "")) for x in before_after.groups())
    assert before > after > 0
    assert "Saved:" in out and "tokens by compaction" in out
    assert "Context after the demo" in out and "Free space" in out and "Autocompact buffer" in out
    assert "Subagents: 1 child" in out and "not in this window" in out  # the explore child, counted apart
    assert out.count("⛁") > 10


def test_demo_shows_the_engine_working_as_it_works_and_explains_its_words(demo_run):
    result, _, _ = demo_run
    out = result.output
    summary = out.index("Persisted tool results")
    live = [out.find(mark) for mark in ("⏺ read_file", "chars saved to", "compacted (auto")]
    assert all(0 <= at < summary for at in live), live  # printed while it ran, before the summary
    for word in ("microcompact", "session memory", "autocompact buffer"):
        assert f"{word} " in out.split("What you saw", 1)[1]
    assert "go on with a real model" in out and "--resume" in out  # --cwd given: resuming there is fine


def test_demo_on_its_own_source_does_not_send_a_real_model_into_site_packages(tmp_path, monkeypatch):
    import mtagent.cli.demo_cmd as demo_cmd

    monkeypatch.setattr(demo_cmd, "demo_root", lambda: DEMO_SOURCE)
    result = runner.invoke(app, ["demo"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "--resume" not in result.output and "cd your-project && mtagent --model" in result.output


def test_demo_transcript_matches_what_it_printed_and_reads_back(demo_run):
    result, sessions, home = demo_run
    assert len(sessions) == 1
    sid = sessions[0].session_id
    assert sid in result.output
    report = read_session_report(sessions[0].path)
    assert len(report.persisted) >= 1 and len(report.compactions) >= 1
    shown = runner.invoke(app, ["sessions", "show", sid, "--cwd", str(DEMO_SOURCE)],
                          env={"MTAGENT_HOME": str(home)})
    assert shown.exit_code == 0, shown.output
    assert "compact" in shown.output.lower()


def test_demo_session_resumes_from_its_summary(demo_run, monkeypatch):
    _, sessions, home = demo_run
    monkeypatch.setenv("MTAGENT_HOME", str(home))
    resumed = load_session(DEMO_SOURCE, sessions[0].session_id)
    assert resumed.boundary is not None
    assert resumed.messages and len(resumed.messages) < sessions[0].messages


def test_demo_rejects_a_tiny_window_and_a_missing_folder(tmp_path):
    small = runner.invoke(app, ["demo", "--window", "1000"])
    assert small.exit_code == 2 and "too small for the demo" in small.stderr
    missing = runner.invoke(app, ["demo", "--cwd", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "is not a folder" in missing.stderr


def test_demo_rejects_a_zero_window_instead_of_using_the_default():
    zero = runner.invoke(app, ["demo", "--window", "0"])
    assert zero.exit_code == 2 and "--window 0 is too small for the demo" in zero.stderr
