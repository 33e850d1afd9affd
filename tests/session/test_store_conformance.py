"""One suite, both backends: what every :class:`~mtagent.session.store.Store` must guarantee."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from mtagent.errors import ArtifactPathError, SessionLocked, SessionNotFound, UsageError
from mtagent.session import schema
from mtagent.session.audit import AuditEvent, AuditingSink
from mtagent.session.store import Store, TranscriptAppender

CHILD = Path(__file__).with_name("store_child.py")
PROJECT = "proj-0123456789ab"


def _msg(i: int) -> dict:
    return schema.message_to_record(HumanMessage(f"message {i}", id=f"m{i}"))


def _child(backend: str, home: Path, dsn: str | None, tenant: str, sid: str, mode: str,
           *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(CHILD), backend, str(home), dsn or "-", tenant, PROJECT, sid,
                             mode, *extra], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(CHILD.parents[2])})


def test_both_backends_implement_the_protocol(store: Store) -> None:
    assert isinstance(store, Store)
    with store.open_writer(PROJECT, "s-proto") as writer:
        assert isinstance(writer, TranscriptAppender)


def test_append_and_read_back_in_order(store: Store) -> None:
    records = [schema.session_start_record("s1", "/w", "m", "0")] + [_msg(i) for i in range(20)]
    with store.open_writer(PROJECT, "s1") as writer:
        positions = [writer.append(r) for r in records]
        writer.end_turn()
    assert positions == sorted(positions) and len(set(positions)) == len(positions)
    entries = store.read_entries(PROJECT, "s1")
    assert [e.record for e in entries] == records
    assert [e.offset for e in entries] == positions
    assert [e.record["id"] for e in store.read_entries(PROJECT, "s1", start=positions[10])] == \
        [f"m{i}" for i in range(9, 20)]
    assert store.record_count(PROJECT, "s1") == len(records)
    assert store.sessions(PROJECT) == ["s1"] and PROJECT in store.projects()


def test_appending_continues_after_reopening(store: Store) -> None:
    with store.open_writer(PROJECT, "s2") as writer:
        first = writer.append(_msg(0))
    with store.open_writer(PROJECT, "s2") as writer:
        second = writer.append(_msg(1))
    assert second > first
    assert [e.record["id"] for e in store.read_entries(PROJECT, "s2")] == ["m0", "m1"]


def test_invalid_records_are_refused(store: Store) -> None:
    with store.open_writer(PROJECT, "s3") as writer:
        with pytest.raises(ValueError, match="invalid record"):
            writer.append({"type": "transcript_message", "schema_version": 2, "role": "nobody"})
        writer.append(_msg(1))
    assert [e.record["id"] for e in store.read_entries(PROJECT, "s3")] == ["m1"]


def test_resume_reads_only_from_the_last_boundary(store: Store) -> None:
    with store.open_writer(PROJECT, "s4") as writer:
        for i in range(6):
            writer.append(_msg(i))
        writer.append(schema.boundary_record(summary="old", first_kept_id="m2", boundary_id="cb-1"))
        for i in range(6, 10):
            writer.append(_msg(i))
        writer.append(schema.boundary_record(summary="new", first_kept_id="m8", boundary_id="cb-2"))
        writer.append(_msg(10))
    resumed = store.read_since_boundary(PROJECT, "s4")
    assert resumed.boundary_id == "cb-2"
    ids = [r.get("id") for r in resumed.records]
    assert ids == ["m8", "m9", "cb-2", "m10"]
    assert resumed.start == resumed.entries[0].offset and resumed.boundary_position == resumed.entries[2].offset


def test_resume_without_a_boundary_reads_everything(store: Store) -> None:
    with store.open_writer(PROJECT, "s5") as writer:
        for i in range(3):
            writer.append(_msg(i))
    resumed = store.read_since_boundary(PROJECT, "s5")
    assert resumed.boundary_id is None and [r["id"] for r in resumed.records] == ["m0", "m1", "m2"]


def test_unknown_session_is_not_found(store: Store) -> None:
    with pytest.raises(SessionNotFound):
        store.read_entries(PROJECT, "nope")
    with pytest.raises(SessionNotFound):
        store.read_since_boundary(PROJECT, "nope")
    assert store.record_count(PROJECT, "nope") == 0


@pytest.mark.parametrize("sid", ["../x", "a/b", "", "x" * 200])
def test_hostile_session_ids_are_refused(store: Store, sid: str) -> None:
    with pytest.raises(UsageError):
        store.open_writer(PROJECT, sid)


def test_a_second_writer_gets_in_use_naming_the_holder(store: Store, backend: str, store_dsn: str | None,
                                                      mtagent_home: Path) -> None:
    holder = _child(backend, mtagent_home, store_dsn, store.tenant, "s-locked", "hold")
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        with pytest.raises(SessionLocked) as info:
            store.open_writer(PROJECT, "s-locked")
        assert info.value.pid == holder.pid
        assert f"in use by pid {holder.pid}" in str(info.value)
    finally:
        holder.communicate("", timeout=30)
    with store.open_writer(PROJECT, "s-locked") as writer:  # released when the holder closed
        writer.append(_msg(1))


def test_the_lock_is_released_when_the_holder_is_killed(store: Store, backend: str, store_dsn: str | None,
                                                        mtagent_home: Path) -> None:
    holder = _child(backend, mtagent_home, store_dsn, store.tenant, "s-killed", "hold")
    assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    deadline = time.monotonic() + 10
    while True:  # the server notices the dead connection within moments
        try:
            writer = store.open_writer(PROJECT, "s-killed")
            break
        except SessionLocked:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    writer.close()


def test_sigkill_mid_append_leaves_whole_records_only(store: Store, backend: str, store_dsn: str | None,
                                                     mtagent_home: Path) -> None:
    """Two rounds of: a child appends (every third record 200 kB), is SIGKILLed mid-append, a writer reopens."""
    kill_after = 5
    sid = "s-crash"
    acknowledged = -1
    for round_ in range(2):
        start = str(acknowledged + 1)
        child = _child(backend, mtagent_home, store_dsn, store.tenant, sid, "crash", start)
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        for line in child.stdout:
            acknowledged = int(line)
            if acknowledged >= int(start) + kill_after:
                break
        child.send_signal(signal.SIGKILL)  # it is in the middle of its next (maybe 200 kB) append
        child.wait(timeout=30)
        time.sleep(0.2 * round_)
        deadline = time.monotonic() + 10
        while True:
            try:
                writer = store.open_writer(PROJECT, sid)  # repairs a torn tail (files), takes the lock
                break
            except SessionLocked:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        writer.close()
        ids = [e.record["id"] for e in store.read_entries(PROJECT, sid)]
        numbers = [int(i[1:]) for i in ids]
        assert numbers == list(range(len(numbers))), "records are whole, in order, none interleaved"
        assert len(numbers) >= acknowledged + 1, "every acknowledged record survived"
        acknowledged = len(numbers) - 1
    with store.open_writer(PROJECT, sid) as writer:
        writer.append(_msg(acknowledged + 1))
    assert store.read_entries(PROJECT, sid)[-1].record["id"] == f"m{acknowledged + 1}"


def test_artifacts_round_trip_and_are_capped(store_factory, tenant: str) -> None:
    store = store_factory(tenant, max_bytes=1000)
    meta = store.write_artifact(PROJECT, "s6", "tool-results/c1.txt", "small")
    assert not meta.truncated and store.read_artifact(PROJECT, "s6", "tool-results/c1.txt") == "small"
    big = "é" * 999  # 1998 bytes: the cut lands inside a character
    meta = store.write_artifact(PROJECT, "s6", "tool-results/c2.txt", big)
    assert meta.truncated and meta.stored_bytes <= 1000 and meta.original_chars == 999
    assert store.read_artifact(PROJECT, "s6", "tool-results/c2.txt") == "é" * 500
    assert store.list_artifacts(PROJECT, "s6") == ["tool-results/c1.txt", "tool-results/c2.txt"]
    with pytest.raises(ArtifactPathError):
        store.read_artifact(PROJECT, "s6", "tool-results/missing.txt")


@pytest.mark.parametrize("path", ["../escape.txt", "/etc/passwd", "a\x00b", "tool-results/../../x", ""])
def test_hostile_artifact_paths_are_refused(store: Store, path: str) -> None:
    with pytest.raises(ArtifactPathError):
        store.write_artifact(PROJECT, "s7", path, "x")
    with pytest.raises(ArtifactPathError):
        store.read_artifact(PROJECT, "s7", path)


def test_session_memory_and_long_term_memory(store: Store) -> None:
    assert store.read_session_memory(PROJECT, "s8") is None
    store.write_session_memory(PROJECT, "s8", "# Notes\nv1")
    store.write_session_memory(PROJECT, "s8", "# Notes\nv2")
    assert store.read_session_memory(PROJECT, "s8") == "# Notes\nv2"
    assert store.read_memory(PROJECT, "MEMORY.md") is None
    store.write_memory(PROJECT, "MEMORY.md", "- use uv")
    store.write_memory(PROJECT, "topic.md", "details")
    assert store.read_memory(PROJECT, "MEMORY.md") == "- use uv"
    assert store.list_memory(PROJECT) == ["MEMORY.md", "topic.md"]
    for hostile in ("../x.md", "a/b.md", ".hidden"):
        with pytest.raises(UsageError):
            store.write_memory(PROJECT, hostile, "x")


def test_readers_get_the_session_in_the_files_layout(store: Store) -> None:
    """What ``sessions show``, the explain UI and recall read — through the store, whatever it is."""
    from mtagent.session.reader import read_records

    records = [schema.session_start_record("s-read", "/w", "m", "0"), _msg(0), _msg(1)]
    with store.open_writer(PROJECT, "s-read") as writer:
        for record in records:
            writer.append(record)
    store.write_artifact(PROJECT, "s-read", "tool-results/c1.txt", "artifact body")
    path = store.transcript_file(PROJECT, "s-read")
    assert list(read_records(path)) == records
    assert (path.parent / "artifacts" / "s-read" / "tool-results" / "c1.txt").read_text() == "artifact body"
    assert path.parent == store.history_folder(PROJECT)
    assert path.is_relative_to(store.tenant_folder() / "history")
    (info,) = store.session_infos(PROJECT)
    assert (info.session_id, info.messages, info.model) == ("s-read", 2, "m")
    with pytest.raises(SessionNotFound):
        store.transcript_file(PROJECT, "s-absent")
    with pytest.raises(UsageError):
        store.transcript_file(PROJECT, "../escape")


def test_a_live_session_writes_through_its_writer_and_artifacts(store: Store) -> None:
    artifacts = store.session_artifacts(PROJECT, "s-live")
    with store.open_session_writer(PROJECT, "s-live", artifacts) as writer:
        writer.append(schema.session_start_record("s-live", "/w", "m", "0"))
        artifacts.write_text("tool-results/c9.txt", "persisted result")
        writer.end_turn()
    assert store.read_artifact(PROJECT, "s-live", "tool-results/c9.txt") == "persisted result"
    assert store.record_count(PROJECT, "s-live") == 1
    assert store.local_home.is_dir() or not store.local_home.exists()
    assert (store.dsn is None) == (store.backend == "files")


def test_audit_events_round_trip_and_derive_from_records(store: Store) -> None:
    store.audit.record(AuditEvent("export", "alice", store.tenant, "s9", {"format": "md"}))
    with store.open_writer(PROJECT, "s9") as writer:
        audited = AuditingSink(store.audit, store.tenant, "s9", who="bob")
        for record in (schema.message_to_record(AIMessage("", id="a1", tool_calls=[
                           {"id": "c1", "name": "shell", "args": {"command": "ls"}}])),
                       schema.event_record("tool_started", {"tool_call_id": "c1", "tool": "shell",
                                                            "approved_by": "user"}),
                       schema.event_record("tool_denied", {"tool_call_id": "c2", "tool": "shell", "reason": "no"}),
                       schema.boundary_record(summary="s", first_kept_id=None, boundary_id="cb-9")):
            writer.append(record)
            audited.append(record)
    events = store.audit.events()
    assert [(e.action, e.who) for e in events] == [("export", "alice"), ("tool.approved", "bob"),
                                                   ("tool.denied", "bob"), ("compaction", "bob")]
    assert events[1].detail["rule"] == "user" and events[3].detail["boundary_id"] == "cb-9"
    assert all(e.tenant == store.tenant and e.session_id == "s9" for e in events)
    assert [e.action for e in store.audit.events(action="compaction")] == ["compaction"]
    assert len(store.read_entries(PROJECT, "s9")) == 4


def test_a_session_without_a_message_is_discarded_and_one_with_a_message_is_kept(store: Store, backend: str) -> None:
    with store.open_writer(PROJECT, "s-empty") as writer:
        writer.append(schema.session_start_record("s-empty", "/w", "m", "0"))
        writer.append(schema.event_record("tools_loaded", {"names": ["x"]}))
    store.write_artifact(PROJECT, "s-empty", "tool-results/a.txt", "left over")
    with store.open_writer(PROJECT, "s-kept") as writer:
        writer.append(schema.session_start_record("s-kept", "/w", "m", "0"))
        writer.append(_msg(0))
    assert store.discard_empty(PROJECT, "s-kept") is False
    assert store.record_count(PROJECT, "s-kept") == 2
    if backend == "postgres":  # append-only for the app role: the empty session is kept, whole
        assert store.discard_empty(PROJECT, "s-empty") is False
        assert store.record_count(PROJECT, "s-empty") == 2
        return
    assert store.discard_empty(PROJECT, "s-empty") is True
    assert store.sessions(PROJECT) == ["s-kept"]
    assert store.discard_empty(PROJECT, "s-empty") is False  # already gone: nothing to do
    with pytest.raises(SessionNotFound):
        store.read_entries(PROJECT, "s-empty")


def test_a_session_another_process_writes_is_never_discarded(store: Store, backend: str, store_dsn: str | None,
                                                              mtagent_home: Path) -> None:
    holder = _child(backend, mtagent_home, store_dsn, store.tenant, "s-busy", "hold")
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        assert store.discard_empty(PROJECT, "s-busy") is False
        assert "s-busy" in store.sessions(PROJECT)
    finally:
        holder.communicate("", timeout=30)
