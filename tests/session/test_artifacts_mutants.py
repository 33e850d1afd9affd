"""Tests that kill the artifact store's surviving mutants (see docs/mutation.md)."""

from __future__ import annotations

import hashlib

import pytest

from mtagent.errors import ArtifactPathError
from mtagent.session.artifacts import ArtifactStore, get_tool_result_path


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
