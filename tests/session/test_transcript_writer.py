"""The append-only writer (lock, offsets, fsync policy, torn-tail repair) and the reader."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import threading

import pytest
from langchain_core.messages import HumanMessage

from mtagent.errors import SessionLocked, TranscriptCorrupt
from mtagent.session import schema
from mtagent.session.reader import ReadReport, iter_entries, read_first_record, read_records
from mtagent.session.transcript import MemorySink, RecordSink, TranscriptWriter, lock_path


def _msg(i: int) -> dict:
    return schema.message_to_record(HumanMessage(f"message {i}", id=f"m{i}"))


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_append_returns_the_byte_offset_of_each_line(tmp_path):
    path = tmp_path / "s.jsonl"
    with TranscriptWriter(path) as writer:
        offsets = [writer.append(_msg(i)) for i in range(5)]
        assert writer.size == path.stat().st_size
    data = path.read_bytes()
    for i, offset in enumerate(offsets):
        line = data[offset:data.index(b"\n", offset)]
        assert json.loads(line)["id"] == f"m{i}"
    assert [e.offset for e in iter_entries(path)] == offsets


def test_writer_refuses_invalid_records_and_writes_nothing(tmp_path):
    path = tmp_path / "s.jsonl"
    with TranscriptWriter(path) as writer:
        with pytest.raises(ValueError, match="invalid record"):
            writer.append({"type": "transcript_message", "role": "robot"})
    assert path.read_bytes() == b""


def test_second_writer_in_same_process_gets_session_locked_with_pid(tmp_path):
    path = tmp_path / "abc.jsonl"
    with TranscriptWriter(path):
        with pytest.raises(SessionLocked) as info:
            TranscriptWriter(path)
        assert info.value.pid == os.getpid()
        assert f"session abc is in use by pid {os.getpid()}" in str(info.value)
    with TranscriptWriter(path) as again:  # released on close
        again.append(_msg(1))


def test_second_writer_process_fails_with_session_locked(tmp_path):
    path = tmp_path / "shared.jsonl"
    script = textwrap.dedent(f"""
        from mtagent.errors import SessionLocked
        from mtagent.session.transcript import TranscriptWriter
        try:
            TranscriptWriter({str(path)!r})
        except SessionLocked as exc:
            print("LOCKED", exc.pid)
        else:
            print("ACQUIRED")
    """)
    with TranscriptWriter(path):
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["LOCKED", str(os.getpid())], out.stderr
    assert lock_path(path).exists()


def test_fsync_policy_controls_when_data_is_synced(tmp_path, monkeypatch):
    calls: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real(fd)))
    for policy, appends, after_turn in (("always", 3, 4), ("turn", 0, 1), ("never", 0, 0)):
        calls.clear()
        with TranscriptWriter(tmp_path / f"{policy}.jsonl", fsync=policy) as writer:
            for i in range(3):
                writer.append(_msg(i))
            assert len(calls) == appends, policy
            writer.end_turn()
            assert len(calls) == after_turn, policy
    with pytest.raises(ValueError, match="fsync policy"):
        TranscriptWriter(tmp_path / "x.jsonl", fsync="sometimes")  # type: ignore[arg-type]


def test_reader_ignores_torn_last_line_and_never_modifies_the_file(tmp_path):
    path = tmp_path / "s.jsonl"
    with TranscriptWriter(path) as writer:
        for i in range(3):
            writer.append(_msg(i))
    with open(path, "ab") as fh:
        fh.write(b'{"type":"transcript_message","rol')
    before = _digest(path)
    report = ReadReport()
    assert [r["id"] for r in read_records(path, report=report)] == ["m0", "m1", "m2"]
    assert report.torn_tail_offset is not None and "torn last line" in report.warnings[0]
    assert _digest(path) == before


def test_next_writer_truncates_only_the_torn_tail(tmp_path):
    path = tmp_path / "s.jsonl"
    with TranscriptWriter(path) as writer:
        for i in range(3):
            writer.append(_msg(i))
    clean = path.read_bytes()
    path.write_bytes(clean + b'{"type":"transcript_message","rol')
    with TranscriptWriter(path) as writer:
        assert writer.repaired_bytes == len(b'{"type":"transcript_message","rol')
        writer.append(_msg(3))
    assert path.read_bytes().startswith(clean)
    assert [r["id"] for r in read_records(path)] == ["m0", "m1", "m2", "m3"]


def test_an_unparseable_complete_last_line_is_kept_and_reported_not_torn(tmp_path):
    path = tmp_path / "s.jsonl"
    good = schema.dumps_record(_msg(0))
    path.write_bytes(good + b"{not json}\n")
    with pytest.raises(TranscriptCorrupt, match="line 2"):
        read_records(path)
    report = ReadReport()
    assert len(read_records(path, report=report, skip_corrupt=True)) == 1
    assert report.torn_tail_offset is None and report.skipped_corrupt == 1
    with TranscriptWriter(path):
        pass
    assert path.read_bytes() == good + b"{not json}\n"


def test_whole_file_torn_single_line_is_truncated_to_empty(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"type":"sess')
    with TranscriptWriter(path) as writer:
        assert writer.repaired_bytes == 13
    assert path.read_bytes() == b""


def test_corrupt_middle_line_raises_with_line_number_unless_skipped(tmp_path):
    path = tmp_path / "s.jsonl"
    lines = [schema.dumps_record(_msg(i)) for i in range(4)]
    lines[2] = b'{"type":"transcript_message","schema_version":2,"role":7}\n'
    path.write_bytes(b"".join(lines))
    before = _digest(path)
    with pytest.raises(TranscriptCorrupt) as info:
        read_records(path)
    assert info.value.line_no == 3 and "--skip-corrupt" in str(info.value)
    report = ReadReport()
    assert [r["id"] for r in read_records(path, skip_corrupt=True, report=report)] == ["m0", "m1", "m3"]
    assert report.skipped_corrupt == 1
    assert _digest(path) == before
    with TranscriptWriter(path):  # a corrupt middle line is never "repaired" away
        pass
    assert _digest(path) == before


def test_unknown_record_types_stay_in_the_file_and_are_skipped_with_one_warning(tmp_path):
    path = tmp_path / "s.jsonl"
    future = {"type": "hologram", "schema_version": 3, "timestamp": schema.now_iso()}
    path.write_bytes(b"".join(schema.dumps_record(r) for r in (_msg(0), future, future, _msg(1))))
    with TranscriptWriter(path, validate=False) as writer:
        writer.append(_msg(2))
    report = ReadReport()
    assert [r["id"] for r in read_records(path, report=report)] == ["m0", "m1", "m2"]
    assert report.skipped_unknown == 2 and len(report.warnings) == 1
    assert path.read_bytes().count(b"hologram") == 2


def test_threads_sharing_one_writer_get_distinct_offsets(tmp_path):
    path = tmp_path / "s.jsonl"
    offsets: list[int] = []
    with TranscriptWriter(path, fsync="never") as writer:
        def work(base: int) -> None:
            for i in range(200):
                offsets.append(writer.append(_msg(base + i)))

        threads = [threading.Thread(target=work, args=(k * 1000,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    entries = list(iter_entries(path))
    assert sorted(offsets) == [e.offset for e in entries] and len(entries) == 800


def test_memory_sink_and_writer_satisfy_record_sink():
    sink: RecordSink = MemorySink()
    sink.append(_msg(0))
    assert sink.records[0]["id"] == "m0"  # type: ignore[attr-defined]


def test_read_first_record_reads_only_the_session_start(tmp_path):
    path = tmp_path / "s.jsonl"
    start = schema.session_start_record("s", "/p", None, "0.1.0")
    path.write_bytes(schema.dumps_record(start) + b"garbage that is never read\n")
    assert read_first_record(path) == start


def test_for_session_writes_under_the_project_history(tmp_path):
    from mtagent import paths

    with TranscriptWriter.for_session(tmp_path, "s-1", fsync="never") as writer:
        writer.append(_msg(0))
    assert writer.path == paths.session_transcript_path(tmp_path, "s-1")
    assert read_records(writer.path)[0]["id"] == "m0"


def test_invalid_record_as_last_line_is_corrupt_not_torn_and_is_kept(tmp_path):
    path = tmp_path / "s.jsonl"
    bad = b'{"type":"microcompact","schema_version":2,"trigger":"time","cleared_ids":5}\n'
    path.write_bytes(schema.dumps_record(_msg(0)) + bad)
    with pytest.raises(TranscriptCorrupt) as info:
        read_records(path)
    assert info.value.line_no == 2
    with TranscriptWriter(path):
        pass
    assert path.read_bytes().endswith(bad)


def test_deeply_nested_lines_never_crash_a_reader_or_the_repair(tmp_path):
    path = tmp_path / "s.jsonl"
    good = schema.dumps_record(_msg(0))
    path.write_bytes(good + b"[" * 100_000 + b"\n")  # complete: kept, reported
    assert len(read_records(path, skip_corrupt=True)) == 1
    with TranscriptWriter(path):
        pass
    assert path.read_bytes() == good + b"[" * 100_000 + b"\n"
    path.write_bytes(good + b"[" * 100_000)  # no newline: torn, repaired
    assert len(read_records(path)) == 1
    with TranscriptWriter(path):
        pass
    assert path.read_bytes() == good
