"""Artifacts shown by the UI: no secret split by a cut, no server error from a hostile path (#27).

* ``/raw`` streams a line longer than four chunks in pieces; a known secret (or a key shape)
  straddling a piece's edge was sent whole, unredacted.
* The artifact page cut a long line *before* redacting it, so the part of a secret before the
  cut was shown.
* A 5,000-character ``path`` made the server fail (HTTP 500: file name too long).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .conftest import HOSTILE_ID, HOSTILE_PROJECT, DemoSession, ui_options
from starlette.testclient import TestClient

from mtagent.errors import ArtifactPathError
from mtagent.session.artifacts import ArtifactStore
from mtagent.ui import artifacts as art
from mtagent.ui.app import create_app
from mtagent.ui.records import Redactor

SECRET = "sk-test-SECRET-value-0123456789"
SHAPE = "ghp_" + "A1b2C3d4E5" * 4  # a GitHub token shape: redacted without being configured
CHUNK = 256 * 1024


def put(store: ArtifactStore, path: str, text: str) -> None:
    """Raw bytes, as a secret configured after the artifact was written finds them."""
    target = store.root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(text.encode("utf-8"))


def streamed(store: ArtifactStore, path: str, chunk: int) -> str:
    return b"".join(art.stream_artifact(store, path, Redactor((SECRET,)), chunk)).decode("utf-8")


def test_a_secret_straddling_a_chunk_edge_of_a_long_line_is_redacted(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    line = bytearray(b"a" * (6 * CHUNK))
    for n in range(1, 6):  # one secret across every 256 KiB boundary, one key shape beside it
        at = n * CHUNK - len(SECRET) // 2
        line[at:at + len(SECRET)] = SECRET.encode()
        shape_at = n * CHUNK + 4096 - len(SHAPE) // 2  # where the first cut inside the line falls
        line[shape_at - 1:shape_at + len(SHAPE)] = b" " + SHAPE.encode()
    text = line.decode() + "\n"
    put(store, "tool-results/long.txt", text)
    shown = streamed(store, "tool-results/long.txt", CHUNK)
    assert SECRET[:12] not in shown and SHAPE[:8] not in shown
    assert shown == Redactor((SECRET,)).text(text) and shown.count("[redacted]") == 10


@settings(max_examples=30, deadline=None)
@given(chunk=st.integers(min_value=8, max_value=200), gaps=st.lists(st.integers(0, 300), min_size=1, max_size=12),
       tail=st.sampled_from(["", "\n", "é漢\n", "x"]))
def test_raw_equals_the_whole_text_redacted_for_any_chunking(tmp_path_factory, chunk, gaps, tail):
    art_keep, art.MIN_KEEP_BYTES = art.MIN_KEEP_BYTES, 64  # small text, many cuts inside its one line
    try:
        _check_any_chunking(tmp_path_factory, chunk, gaps, tail)
    finally:
        art.MIN_KEEP_BYTES = art_keep


def _check_any_chunking(tmp_path_factory, chunk, gaps, tail):
    store = ArtifactStore(tmp_path_factory.mktemp("a"))
    text = "".join("é" * gap + (SECRET if i % 2 else SHAPE) for i, gap in enumerate(gaps)) + tail
    put(store, "tool-results/t.txt", text)
    assert streamed(store, "tool-results/t.txt", chunk) == Redactor((SECRET,)).text(text)


def test_the_artifact_page_redacts_a_line_before_cutting_it(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    put(store, "tool-results/a.txt", "x" * 90 + SECRET + "y" * 50 + "\n")
    page = art.read_lines(store, "tool-results/a.txt", 1, 10, Redactor((SECRET,)), max_chars=100)
    (number, text, cut) = page.lines[0]
    assert cut and SECRET[:10] not in text, text
    assert text.startswith("x" * 90 + "[redacted]"[:10])


@pytest.mark.parametrize("path", ["tool-results/" + "a" * 5000, "a" * 300, "tool-results/" + "b/" * 3000 + "c"])
def test_a_very_long_artifact_path_is_a_4xx_with_a_message(demo_session: DemoSession, path: str) -> None:
    client = TestClient(create_app(ui_options(demo_session)), base_url="http://127.0.0.1", follow_redirects=False)
    base = f"/p/{HOSTILE_PROJECT}/s/{HOSTILE_ID}"
    for view in ("artifact", "raw"):
        response = client.get(f"{base}/{view}", params={"path": path})
        assert 400 <= response.status_code < 500, (view, response.status_code)
        assert "too long" in response.text or "cannot be read" in response.text or "missing" in response.text
    with pytest.raises(ArtifactPathError):
        art.read_lines(ArtifactStore(demo_session.home), path, 1, 10, Redactor(()), 100)
