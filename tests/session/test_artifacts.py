"""The artifact store: safe relative paths, the size cap, reading back."""

from __future__ import annotations

import hashlib
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


# ── sharp checks that kill the store's surviving mutants (docs/mutation.md) ─────────────────────────

def test_read_head_is_at_most_max_bytes_and_says_what_was_left_out(tmp_path):
    store = ArtifactStore(tmp_path / "a")
    store.write_text("tool-results/big.txt", "0123456789" * 3)
    assert store.read_head("tool-results/big.txt", 30) == "0123456789" * 3  # exactly the limit: no note
    assert store.read_head("tool-results/big.txt", 31) == "0123456789" * 3
    head = store.read_head("tool-results/big.txt", 12)
    assert head == "012345678901… [18 more bytes in tool-results/big.txt]"


def test_read_head_of_a_missing_or_escaping_artifact_is_a_typed_error(tmp_path):
    store = ArtifactStore(tmp_path / "a")
    with pytest.raises(ArtifactPathError, match="missing"):
        store.read_head("tool-results/none.txt", 10)
    with pytest.raises(ArtifactPathError, match="escapes"):
        store.read_head("../a-evil/x.txt", 10)


def test_meta_as_dict_is_what_the_transcript_records(tmp_path):
    store = ArtifactStore(tmp_path / "a")
    meta = store.write_text(get_tool_result_path("call_9"), "hello")
    assert meta.as_dict() == {"path": "tool-results/call_9.txt", "original_chars": 5, "stored_bytes": 5,
                              "truncated": False, "sha256": hashlib.sha256(b"hello").hexdigest()}


def test_safe_ids_keep_their_name_up_to_the_length_limit():
    assert get_tool_result_path("a" * 120) == f"tool-results/{'a' * 120}.txt"
    long = get_tool_result_path("a" * 121)
    assert long.startswith(f"tool-results/{'a' * 80}-") and len(long) == len("tool-results/") + 80 + 9 + 4
