"""Fast resume: the sidecar index, the backwards scan, and their fallbacks."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage

from mtagent.session import index as idx
from mtagent.session import schema
from mtagent.session.transcript import TranscriptWriter


def _msg(i: int, text: str = "") -> dict:
    return schema.message_to_record(HumanMessage(text or f"message {i}", id=f"m{i}"))


def _session(path, n: int = 300, boundaries=((100, 90), (250, 240))) -> dict[str, int]:
    """Write ``n`` messages with boundaries after message a keeping from message b; offsets by id."""
    offsets: dict[str, int] = {}
    with TranscriptWriter(path, fsync="never") as writer:
        for i in range(n):
            offsets[f"m{i}"] = writer.append(_msg(i))
            for after, kept in boundaries:
                if i == after:
                    rec = schema.boundary_record(summary=f"upto {after}", first_kept_id=f"m{kept}",
                                                 boundary_id=f"cb{after}")
                    offsets[f"cb{after}"] = writer.append(rec)
    return offsets


def _forward_lines(data: bytes) -> list[tuple[int, bytes]]:
    out, offset = [], 0
    for line in data.split(b"\n")[:-1]:
        out.append((offset, line))
        offset += len(line) + 1
    return out


@settings(max_examples=80, deadline=None)
@given(lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=30),
       torn=st.binary(max_size=10).map(lambda b: b.replace(b"\n", b"")),
       block=st.integers(1, 64))
def test_backwards_lines_match_forward_split_for_any_block_size(tmp_path_factory, lines, torn, block):
    path = tmp_path_factory.mktemp("b") / "f"
    data = b"".join(line + b"\n" for line in lines)
    path.write_bytes(data + torn)
    old = idx.SCAN_BLOCK_BYTES
    idx.SCAN_BLOCK_BYTES = block
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            assert idx.clean_end(fd) == len(data)
            got = list(idx.lines_backwards(fd, idx.clean_end(fd)))
        finally:
            os.close(fd)
    finally:
        idx.SCAN_BLOCK_BYTES = old
    assert got == _forward_lines(data)[::-1]


def test_index_points_at_last_boundary_and_its_first_kept_message(tmp_path):
    path = tmp_path / "s.jsonl"
    offsets = _session(path)
    assert [e.id for e in idx.load_index(path)] == ["cb100", "cb250"]
    point = idx.locate_resume_point(path)
    assert (point.source, point.boundary_id, point.start) == ("index", "cb250", offsets["m240"])
    assert point.boundary_offset == offsets["cb250"]


@pytest.mark.parametrize("damage", ["delete", "garbage", "wrong_offsets", "torn", "stale"])
def test_lost_or_wrong_index_falls_back_to_scan_with_same_answer(tmp_path, damage):
    path = tmp_path / "s.jsonl"
    offsets = _session(path)
    index_file = idx.index_path(path)
    if damage == "delete":
        index_file.unlink()
    elif damage == "garbage":
        index_file.write_bytes(b"\x00{not json")
    elif damage == "wrong_offsets":
        lines = index_file.read_text().splitlines()
        last = json.loads(lines[-1])
        last["offset"] += 7
        index_file.write_text("\n".join([*lines[:-1], json.dumps(last)]) + "\n")
    elif damage == "torn":  # the writer died while appending the entry
        index_file.write_bytes(index_file.read_bytes()[:-9])
    else:  # the writer died between the boundary line and the index update
        index_file.write_text(index_file.read_text().splitlines()[0] + "\n")
    point = idx.locate_resume_point(path)
    assert (point.boundary_id, point.start) == ("cb250", offsets["m240"])
    assert point.source == "scan"
    with TranscriptWriter(path):  # the next writer rebuilds the index
        pass
    assert idx.locate_resume_point(path).source == "index"
    assert [e.id for e in idx.load_index(path)] == ["cb100", "cb250"]


def test_boundary_text_inside_message_content_does_not_fool_the_scan(tmp_path):
    path = tmp_path / "s.jsonl"
    decoy = '{"type":"compact_boundary","id":"fake"}'
    offsets = _session(path, n=20, boundaries=((5, 3),))
    with TranscriptWriter(path) as writer:
        writer.append(_msg(99, decoy))
        writer.append(schema.event_record("x", {"nested": {"type": "compact_boundary", "id": "nested"}}))
    idx.index_path(path).unlink()
    point = idx.locate_resume_point(path)
    assert (point.boundary_id, point.start) == ("cb5", offsets["m3"])


def test_no_boundary_means_resume_from_the_start(tmp_path):
    path = tmp_path / "s.jsonl"
    _session(path, n=10, boundaries=())
    assert idx.locate_resume_point(path).start == 0


def test_boundary_keeping_nothing_starts_at_the_boundary(tmp_path):
    path = tmp_path / "s.jsonl"
    with TranscriptWriter(path) as writer:
        writer.append(_msg(0))
        at = writer.append(schema.boundary_record(summary="all", first_kept_id=None, boundary_id="cb"))
    for remove in (False, True):
        if remove:
            idx.index_path(path).unlink()
        assert idx.locate_resume_point(path).start == at


def test_torn_boundary_line_at_the_end_is_not_used(tmp_path):
    path = tmp_path / "s.jsonl"
    offsets = _session(path, n=20, boundaries=((5, 3),))
    idx.index_path(path).unlink()
    line = schema.dumps_record(schema.boundary_record(summary="x", first_kept_id="m15", boundary_id="torn"))
    with open(path, "ab") as fh:
        fh.write(line[:-5])
    assert idx.locate_resume_point(path).boundary_id == "cb5"
    assert idx.locate_resume_point(path).start == offsets["m3"]


def test_message_offsets_in_writer_memory_follow_the_view_not_the_session(tmp_path):
    path = tmp_path / "s.jsonl"
    with TranscriptWriter(path) as writer:
        for i in range(50):
            writer.append(_msg(i))
        writer.append(schema.boundary_record(summary="s", first_kept_id="m45", boundary_id="cb"))
        assert set(writer._index._offsets) == {f"m{i}" for i in range(45, 50)}


def test_index_entry_without_kept_offset_finds_it_by_scanning_back(tmp_path):
    path = tmp_path / "s.jsonl"
    offsets = _session(path)
    lines = idx.index_path(path).read_text().splitlines()
    last = {**json.loads(lines[-1]), "first_kept_offset": None}
    idx.index_path(path).write_text("\n".join([*lines[:-1], json.dumps(last)]) + "\n")
    point = idx.locate_resume_point(path)
    assert (point.source, point.start) == ("index", offsets["m240"])
