"""Paths honour MTAGENT_HOME and create nothing by themselves; the event bus never breaks a turn."""

from __future__ import annotations

import pytest

from mtagent import paths
from mtagent.errors import UsageError
from mtagent.events import EventBus, EventType, SessionStats


def test_home_follows_mtagent_home(mtagent_home):
    assert paths.mtagent_home() == mtagent_home


def test_layout_matches_the_spec(tmp_path, mtagent_home):
    key = paths.project_hash(tmp_path)
    assert paths.session_transcript_path(tmp_path, "s1") == mtagent_home / "history" / key / "s1.jsonl"
    assert paths.session_artifact_dir(tmp_path, "s1") == mtagent_home / "history" / key / "artifacts" / "s1"
    assert paths.project_memory_dir(tmp_path) == mtagent_home / "projects" / key / "memory"


def test_path_functions_create_no_folders(tmp_path, mtagent_home):
    paths.session_artifact_dir(tmp_path, "s1")
    paths.project_memory_dir(tmp_path)
    assert list(mtagent_home.iterdir()) == []


def test_project_hash_is_stable_and_distinguishes_projects(tmp_path):
    a, b = tmp_path / "proj", tmp_path / "other" / "proj"
    a.mkdir()
    b.mkdir(parents=True)
    assert paths.project_hash(a) == paths.project_hash(a)
    assert paths.project_hash(a) != paths.project_hash(b)
    assert paths.project_hash(a).startswith("proj-")


@pytest.mark.parametrize("bad", ["../x", "a/b", "", ".hidden", "x" * 200, "a\x00b"])
def test_unsafe_session_ids_are_refused(bad, tmp_path):
    with pytest.raises(UsageError, match="invalid session id"):
        paths.session_transcript_path(tmp_path, bad)


def test_bus_delivers_to_typed_and_catch_all_handlers_and_survives_a_failing_one():
    bus = EventBus()
    got = []

    def broken(event):
        raise RuntimeError("boom")

    bus.subscribe(broken, EventType.COMPACT_BOUNDARY)
    bus.subscribe(lambda e: got.append(("typed", e.data["pre"])), EventType.COMPACT_BOUNDARY)
    unsubscribe = bus.subscribe(lambda e: got.append(("all", e.type)))
    bus.emit(EventType.COMPACT_BOUNDARY, pre=100)
    unsubscribe()
    bus.emit(EventType.MICRO_COMPACTED)
    assert got == [("typed", 100), ("all", EventType.COMPACT_BOUNDARY)]


def test_spec_event_types_and_stats_exist():
    for name in ["TOOL_RESULT_PERSISTED", "MICRO_COMPACTED", "SESSION_MEMORY_UPDATED",
                 "COMPACT_BOUNDARY", "COMPACT_FAILED", "AUTO_COMPACT_DISABLED"]:
        assert hasattr(EventType, name)
    stats = SessionStats()
    for field in ["last_effective_context_limit", "last_auto_compact_threshold",
                  "last_tool_result_chars", "compression_failure_count"]:
        assert getattr(stats, field) == 0
