"""Session listing: counts from byte patterns must equal what a full parse finds."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage

from mtagent.session import catalog, schema
from mtagent import paths
from mtagent.session.catalog import count_patterns
from mtagent.session.files_store import FilesStore
from mtagent.session.transcript import TranscriptWriter

PATTERNS = [re.compile(rb'"type"\s*:\s*"compact_boundary"'), re.compile(rb'"type"\s*:\s*"transcript_message"'),
            re.compile(rb"aa")]
PIECES = [b'"type":"compact_boundary"', b'"type" : "transcript_message"', b"a", b"aaa", b"x", b"\n"]


@settings(max_examples=150, deadline=None)
@given(pieces=st.lists(st.sampled_from(PIECES), max_size=120), chunk=st.integers(1, 64))
def test_chunked_counts_equal_whole_file_counts_at_any_chunk_size(tmp_path_factory, pieces, chunk):
    data = b"".join(pieces)
    path = tmp_path_factory.mktemp("c") / "f"
    path.write_bytes(data)
    old = catalog.READ_CHUNK_BYTES
    catalog.READ_CHUNK_BYTES = chunk
    try:
        assert count_patterns(path, PATTERNS, keep=40) == [len(p.findall(data)) for p in PATTERNS]
    finally:
        catalog.READ_CHUNK_BYTES = old


def test_list_sessions_reports_counts_times_and_model(tmp_path):
    with TranscriptWriter.for_session(tmp_path, "20260101T000000000-aaaaaa") as writer:
        writer.append(schema.session_start_record("s", str(tmp_path), "m-1", "0.1.0",
                                                  timestamp="2026-01-01T00:00:00.000Z"))
        for i in range(7):
            writer.append(schema.message_to_record(HumanMessage("hi", id=f"m{i}"),
                                                   timestamp="2026-01-01T00:05:00.000Z"))
        writer.append(schema.boundary_record(summary="s", first_kept_id="m6", timestamp="2026-01-01T01:00:00.000Z"))
    (info,) = FilesStore().session_infos(paths.project_hash(tmp_path))
    assert (info.messages, info.compactions, info.model) == (7, 1, "m-1")
    assert info.started.isoformat() == "2026-01-01T00:00:00+00:00"
    assert info.last_activity.isoformat() == "2026-01-01T01:00:00+00:00"
    assert FilesStore().session_infos(paths.project_hash(tmp_path / "elsewhere")) == []
