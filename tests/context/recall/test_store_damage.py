"""Every kind of damage to the recall index rebuilds it; what is not ours is set aside, untouched (#27).

The index is a cache of the transcripts. These tests break it the ways the issue found — the
file is a directory, the FTS table was dropped, rows hold the wrong types, another program's
database (or a symlink to one outside ``MTAGENT_HOME``, or a hard link) sits at its path — and
check that ``mtagent run`` still works, ``mtagent recall`` prints hits again without a traceback,
and nothing that is not ours changed by a byte. Also: ``mtagent run`` writes its live batch.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from model_script import script
from typer.testing import CliRunner

from mtagent import paths
from mtagent.cli.app import app
from mtagent.context.recall.indexer import index_path
from mtagent.context.recall.store import RecallStore
from mtagent.context.recall.store_file import foreign_reason
from mtagent.session import schema
from mtagent.session.transcript import TranscriptWriter

runner = CliRunner()
NEEDLE = "zanzibar_overflow_total"


@pytest.fixture
def project(project: Path) -> Path:
    with TranscriptWriter(paths.session_transcript_path(project, "s1"), session_id="s1") as writer:
        for m in (HumanMessage(f"why does {NEEDLE} fail?", id="u1"), AIMessage(f"{NEEDLE} is int32", id="a1")):
            writer.append(schema.message_to_record(m))
    return project


def recall_hits(root: Path) -> list[dict]:
    result = runner.invoke(app, ["recall", NEEDLE, "--json", "--cwd", str(root)])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return json.loads(result.stdout)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_sql(path: Path, sql: str, parameters: tuple = ()) -> None:
    """Run one statement on the SQLite file at ``path`` and commit it."""
    conn = sqlite3.connect(path)
    conn.execute(sql, parameters)
    conn.commit()
    conn.close()


def foreign_db(path: Path) -> None:
    write_sql(path, "CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)")
    write_sql(path, "INSERT INTO notes(body) VALUES('precious')")


def set_aside(index: Path) -> list[Path]:
    return sorted(p for p in index.parent.iterdir() if ".set-aside-" in p.name and not p.name.endswith(("-wal", "-shm")))


def test_an_index_that_is_a_directory_is_set_aside_and_run_and_recall_work(project, tmp_path):
    index = index_path(project)
    index.mkdir(parents=True)
    (index / "keep.txt").write_text("mine", encoding="utf-8")
    ran = runner.invoke(app, ["run", "--cwd", str(project), "--model", script(tmp_path, ["done"]), "hi"])
    assert ran.exit_code == 0, ran.output
    assert recall_hits(project)
    (moved,) = set_aside(index)
    assert (moved / "keep.txt").read_text(encoding="utf-8") == "mine"


@pytest.mark.parametrize("damage", ["DROP TABLE items_fts", "UPDATE sources SET offset='far'"],
                         ids=["dropped-fts-table", "wrong-typed-source-offset"])
def test_a_dropped_fts_table_or_a_wrong_typed_source_offset_is_rebuilt_from_the_transcripts(project, damage):
    assert recall_hits(project)
    write_sql(index_path(project), damage)
    assert recall_hits(project), "the FTS index came back empty and stayed empty"
    assert recall_hits(project)


@pytest.mark.parametrize("column,value", [("ts", "yesterday"), ("line_start", "x"), ("seq", 1.5),
                                          ("text", b"\x00\x01"), ("session", 7)])
def test_rows_of_the_wrong_type_rebuild_the_index(project, column, value):
    assert recall_hits(project)
    write_sql(index_path(project), f"UPDATE items SET {column}=?", (value,))
    result = runner.invoke(app, ["recall", NEEDLE, "--json", "--cwd", str(project)])
    assert result.exit_code == 0 and isinstance(json.loads(result.stdout), list), result.output
    shown = runner.invoke(app, ["recall", NEEDLE, "--cwd", str(project)])
    assert shown.exit_code == 0 and "Traceback" not in shown.output, shown.output
    assert recall_hits(project)


def test_another_programs_database_is_set_aside_unmodified(project):
    index = index_path(project)
    index.parent.mkdir(parents=True, exist_ok=True)
    foreign_db(index)
    before = digest(index)
    assert recall_hits(project)
    (moved,) = set_aside(index)
    assert digest(moved) == before
    assert sqlite3.connect(moved).execute("SELECT body FROM notes").fetchall() == [("precious",)]


def test_a_symlink_to_a_database_outside_home_is_never_opened_for_writing(project, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "their.sqlite"
    foreign_db(target)
    before, mtime = digest(target), target.stat().st_mtime_ns
    index = index_path(project)
    index.parent.mkdir(parents=True, exist_ok=True)
    index.symlink_to(target)
    assert recall_hits(project)
    assert digest(target) == before and target.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in outside.iterdir()) == ["their.sqlite"]  # no -wal/-shm beside it
    assert not index.is_symlink() and foreign_reason(index) is None
    (moved,) = set_aside(index)
    assert moved.is_symlink() and moved.resolve() == target


def test_a_hard_link_at_the_index_path_is_set_aside(project, tmp_path):
    target = tmp_path / "their.sqlite"
    foreign_db(target)
    before = digest(target)
    index = index_path(project)
    index.parent.mkdir(parents=True, exist_ok=True)
    os.link(target, index)
    assert recall_hits(project)
    assert digest(target) == before and target.stat().st_nlink == 2  # the set-aside link is the other


def test_garbage_bytes_are_set_aside_and_our_own_index_is_kept(project):
    index = index_path(project)
    index.parent.mkdir(parents=True, exist_ok=True)
    index.write_bytes(b"not a database at all" * 10)
    assert recall_hits(project)
    assert len(set_aside(index)) == 1
    assert recall_hits(project) and len(set_aside(index)) == 1  # ours now: reused, not set aside again


def test_an_index_from_before_the_application_id_is_still_ours(project):
    store = RecallStore(index_path(project))
    store.close()
    write_sql(index_path(project), "PRAGMA application_id=0")
    assert foreign_reason(index_path(project)) is None


def test_run_leaves_its_records_in_the_index(project, tmp_path):
    """Not indexed record by record: the session catches the index up from its transcript when it
    closes, and records how far it read, so the next reader reads none of it again."""
    model = script(tmp_path, [f"the answer mentions {NEEDLE}_live"])
    ran = runner.invoke(app, ["run", "--cwd", str(project), "--model", model, "say it"])
    assert ran.exit_code == 0, ran.output
    conn = sqlite3.connect(index_path(project))
    try:
        rows = conn.execute("SELECT session, text FROM items WHERE text LIKE ?", (f"%{NEEDLE}_live%",)).fetchall()
        caught_up = conn.execute("SELECT count(*) FROM sources").fetchone()[0]
    finally:
        conn.close()
    assert rows, "the index never got the run's records"
    assert caught_up == 1  # the run's transcript, read to its end


def test_a_rebuild_checks_whose_file_it_is_once(project, monkeypatch: pytest.MonkeyPatch):
    """Opening checks the file (ours?), a damaged one is then removed after one more check of its
    own (it may have been swapped since); the fresh database needs no third look."""
    from mtagent.context.recall import store_file

    index = index_path(project)
    RecallStore(index).close()
    write_sql(index, "DROP TABLE edits")
    checked: list[Path] = []
    real = store_file.foreign_reason
    monkeypatch.setattr(store_file, "foreign_reason", lambda path: (checked.append(path), real(path))[1])
    store = RecallStore(index)
    try:
        assert store.rebuilt and store.path == index
        assert store.run(lambda c: c.execute("SELECT count(*) FROM edits").fetchone()[0], None) == 0
    finally:
        store.close()
    assert checked == [index, index]
    assert set_aside(index) == []  # ours: deleted and recreated, not set aside
