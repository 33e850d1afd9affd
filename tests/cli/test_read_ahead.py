"""The session's files are read ahead while the libraries import — and a hostile project cannot
turn that into a hang, a read through a link, or a read outside the session's own files."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from typer.testing import CliRunner

from mtagent import paths
from mtagent.cli import read_ahead as ra
from mtagent.cli.app import app

runner = CliRunner()
PROJECT_FILES = {"CONTEXT.md": "# rules\n", ".mtagent/rules/a.md": "a\n", ".mtagent/rules/deep/b.md": "b\n"}


def _transcripts(project: Path, *ids: str) -> list[Path]:
    history = paths.history_dir(project)
    history.mkdir(parents=True, exist_ok=True)
    made = []
    for sid in ids:
        (history / f"{sid}.jsonl").write_text("{}\n", encoding="utf-8")
        made.append(history / f"{sid}.jsonl")
    return made


def test_a_new_session_reads_ahead_config_context_files_and_rules_but_no_transcript(project):
    _transcripts(project, "20260101T000000000-aaaaaa")
    files = ra.session_files(project)
    assert project / "CONTEXT.md" in files
    assert {project / ".mtagent/rules/a.md", project / ".mtagent/rules/deep/b.md"} <= set(files)
    assert paths.global_config_path() in files and paths.project_config_path(project) in files
    assert not [f for f in files if f.suffix == ".jsonl"]


def test_resume_and_continue_read_ahead_the_transcript_they_continue_and_its_index(project):
    older, newer = _transcripts(project, "20260101T000000000-aaaaaa", "20260102T000000000-bbbbbb")
    assert {newer, newer.with_suffix(".idx")} <= set(ra.session_files(project, latest=True))
    assert newer in ra.session_files(project, resume="latest")
    by_prefix = ra.session_files(project, resume="20260101")
    assert older in by_prefix and newer not in by_prefix


def test_a_resume_id_is_only_matched_against_the_history_never_joined_into_a_path(project, tmp_path):
    _transcripts(project, "20260101T000000000-aaaaaa")
    secret = tmp_path / "secret.jsonl"
    secret.write_text("token\n", encoding="utf-8")
    for hostile in ("../../secret", str(secret), "/etc/passwd", "..", ""):
        files = ra.session_files(project, resume=hostile)
        assert secret not in files
        assert all(f.parent == paths.history_dir(project) for f in files if f.suffix in (".jsonl", ".idx"))


def test_a_fifo_named_like_a_context_file_does_not_hang_the_start(project):
    (project / "CONTEXT.md").unlink()
    os.mkfifo(project / "CONTEXT.md")
    done = threading.Event()
    threading.Thread(target=lambda: (ra.read_ahead(ra.session_files(project)), done.set()), daemon=True).start()
    assert done.wait(10), "read-ahead blocked on a FIFO"


def test_links_and_device_files_are_never_opened(project, tmp_path, monkeypatch):
    outside = tmp_path / "outside.md"
    outside.write_text("x" * 100, encoding="utf-8")
    (project / "CONTEXT.md").unlink()
    (project / "CONTEXT.md").symlink_to("/dev/zero")
    (project / "CONTEXT.local.md").symlink_to(outside)
    (project / ".mtagent" / "rules" / "loop").symlink_to(project / ".mtagent" / "rules")
    os.link(outside, project / ".mtagent" / "rules" / "hard.md")
    asked: list[int] = []
    monkeypatch.setattr(os, "posix_fadvise", lambda fd, offset, length, advice: asked.append(os.fstat(fd).st_ino))
    count = ra.read_ahead(ra.session_files(project) + [project / "CONTEXT.md", project / "CONTEXT.local.md",
                                                         Path("/proc/self/environ")])
    assert outside.stat().st_ino not in asked  # neither through the symlink nor through the hard link
    assert count == len(asked) == 2  # rules/a.md and rules/deep/b.md; the loop was not followed


def test_only_a_long_transcripts_tail_is_read_ahead(project, monkeypatch):
    (transcript,) = _transcripts(project, "20260101T000000000-aaaaaa")
    transcript.write_bytes(b"x" * 5000)
    seen: dict[int, tuple[int, int]] = {}
    monkeypatch.setattr(os, "posix_fadvise",
                        lambda fd, offset, length, advice: seen.__setitem__(os.fstat(fd).st_ino, (offset, length)))
    ra.read_ahead([transcript], tail_bytes=1000)
    assert seen[transcript.stat().st_ino] == (4000, 1000)


def test_run_reads_ahead_after_the_imports_started_and_before_the_session_opens(project, tmp_path, monkeypatch):
    from mtagent.cli import session_options, warmup

    order: list[str] = []
    start, open_session = warmup.Warmup.start, session_options.SessionOptions.open_session
    monkeypatch.setattr(warmup.Warmup, "start", lambda self: (order.append("imports"), start(self))[1])
    monkeypatch.setattr(ra, "read_ahead", lambda files, **kw: order.append(f"read ahead {len(files)}") or 0)
    monkeypatch.setattr(session_options.SessionOptions, "open_session",
                        lambda self, **kw: (order.append("open"), open_session(self, **kw))[1])
    model = tmp_path / "script.json"
    model.write_text(json.dumps(["done"]), encoding="utf-8")
    result = runner.invoke(app, ["run", "--cwd", str(project), "--model", f"scripted:{model}", "go"])
    assert result.exit_code == 0, result.output
    assert [o.split()[0] for o in order] == ["read", "imports", "read", "open"]  # the stack's files, then the session's
    assert int(order[2].split()[-1]) >= 3  # configs, CONTEXT.md, the rules
    assert ra.module_files(), "the session open did not leave the next start its module list"


def test_the_module_list_names_what_was_imported_and_is_written_only_when_it_changed(tmp_path):
    ra.remember_modules()
    listed = ra.module_files()
    target = paths.mtagent_home() / "cache" / ra.MODULES_FILE
    assert Path(json.__cached__ or json.__file__) in listed and all(p.is_absolute() for p in listed)
    assert not [p for p in listed if p.suffix == ".py"]  # bytecode and extensions, what the loader reads
    before = target.stat().st_mtime_ns
    ra.remember_modules()
    assert target.stat().st_mtime_ns == before


def test_a_damaged_module_list_reads_as_the_absolute_paths_it_holds_and_no_more(tmp_path):
    target = paths.mtagent_home() / "cache" / ra.MODULES_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("relative/x.pyc\n/abs/y.pyc\n" + "/z.pyc\n" * (ra.MAX_MODULE_FILES + 10), encoding="utf-8")
    listed = ra.module_files()
    assert listed[0] == Path("/abs/y.pyc") and len(listed) < ra.MAX_MODULE_FILES
    target.write_bytes(b"\xff\xfe not text")
    assert ra.module_files() == []
