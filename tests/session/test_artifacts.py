"""The artifact store: safe relative paths, the size cap, reading back."""

from __future__ import annotations

import os

import pytest

from mtagent import paths
from mtagent.errors import ArtifactPathError
from mtagent.session.artifacts import (
    ArtifactStore,
    get_tool_result_path,
)


def test_tool_result_round_trip_under_the_session_folder(tmp_path):
    store = ArtifactStore.for_session(tmp_path, "s1")
    meta = store.write_text(get_tool_result_path("call_1"), "full output\n" * 10)
    assert meta.path == "tool-results/call_1.txt" and not meta.truncated
    assert store.root == paths.session_artifact_dir(tmp_path, "s1")
    assert store.read_text(meta.path) == "full output\n" * 10
    assert store.list_tool_results() == [store.root / meta.path]


def test_artifact_cap_truncates_on_a_utf8_boundary_and_says_so(tmp_path):
    store = ArtifactStore(tmp_path / "a", max_bytes=10)
    meta = store.write_text("tool-results/x.txt", "ééééééé")  # 14 bytes
    assert meta.truncated and meta.stored_bytes == 10 and meta.original_chars == 7
    assert store.read_text("tool-results/x.txt") == "ééééé"


def test_odd_tool_call_ids_become_one_safe_file_name(tmp_path):
    store = ArtifactStore(tmp_path / "a")
    for odd in ("../../etc/passwd", "..", ".hidden", "a\\b", "x" * 300):
        rel = get_tool_result_path(odd)
        assert store.resolve(rel).parent == (store.root / "tool-results").resolve()
        assert store.read_text(store.write_text(rel, odd).path) == odd
    assert get_tool_result_path("a/b") != get_tool_result_path("a_b")


@pytest.mark.parametrize("bad", ["../x", "tool-results/../../x", "/etc/passwd", "C:\\x", "", "a\x00b"])
def test_paths_outside_the_folder_are_refused(tmp_path, bad):
    store = ArtifactStore(tmp_path / "a")
    with pytest.raises(ArtifactPathError):
        store.read_text(bad)
    assert not store.exists(bad)


def test_symlink_pointing_out_is_refused(tmp_path):
    store = ArtifactStore(tmp_path / "a")
    (tmp_path / "secret.txt").write_text("secret")
    paths.ensure_dir(store.root / "tool-results")
    os.symlink(tmp_path / "secret.txt", store.root / "tool-results" / "link.txt")
    with pytest.raises(ArtifactPathError, match="escapes"):
        store.read_text("tool-results/link.txt")


def test_missing_artifact_is_a_typed_error_that_says_what_happened(tmp_path):
    store = ArtifactStore(tmp_path / "a")
    with pytest.raises(ArtifactPathError, match="missing"):
        store.read_text("tool-results/gone.txt")


def test_a_text_written_in_pieces_is_cut_on_a_character_past_the_cap_and_hashed_as_stored(tmp_path):
    """write_text encodes a piece (1 Mi characters) at a time: the cap may fall inside a piece, inside a
    two-byte character; what is stored, counted and hashed is exactly the old whole-text cut."""
    import hashlib

    from mtagent.redaction import Redactor

    for cap, text in ((3_000_001, "é" * 2_000_000), (10, "abc" * 1_000_000), (100, "a" * (1 << 20) + "é"),
                      (1 << 30, "x\ud800y" + "z" * (1 << 20))):
        store = ArtifactStore(tmp_path / str(cap), max_bytes=cap, redactor=Redactor(()))
        meta = store.write_text("tool-results/a.txt", text)
        whole = text.encode("utf-8", errors="replace")
        expected = whole[:cap].decode("utf-8", errors="ignore").encode("utf-8") if len(whole) > cap else whole
        stored = (tmp_path / str(cap) / "tool-results" / "a.txt").read_bytes()
        assert stored == expected and meta.stored_bytes == len(expected) and meta.truncated == (len(whole) > cap)
        assert meta.sha256 == hashlib.sha256(expected).hexdigest() and meta.original_chars == len(text)
