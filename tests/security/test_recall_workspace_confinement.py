"""The recall index of workspace files reads under the same confinement as the file tools (#27):
no hard links, no symlink race, bounded reads, redacted before it is stored — and an untrusted
project's config cannot switch it on."""

from __future__ import annotations

import os
import threading
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from mtagent import trust
from mtagent.config import RecallSettings, load_settings
from mtagent.context.recall.store import RecallStore
from mtagent.context.recall.workspace import sync_workspace

CANARY = "CANARY-OUTSIDE-recall-31c7"
TOKEN = "ghx_recallCanaryToken0123456789abcd"


def _indexed(store: RecallStore) -> str:
    return "\n".join(str(text) for (text,) in store.execute("SELECT text FROM items"))


def _synced(project: Path) -> str:
    store = RecallStore(None)
    sync_workspace(project, store, RecallSettings(index_workspace=True))
    return _indexed(store)


@pytest.fixture
def project(project: Path, tmp_path: Path) -> Path:
    (project / "ok.txt").write_text("ordinary text\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text(f"{CANARY}\n")
    return project


def test_a_hard_link_to_an_outside_file_is_not_indexed(project: Path) -> None:
    os.link(project.parent / "outside" / "secret.txt", project / "hard.txt")
    text = _synced(project)
    assert "ordinary text" in text and CANARY not in text


def test_workspace_secrets_are_redacted_before_they_are_stored(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    (project / "deploy.sh").write_text(f"export GITHUB_TOKEN={TOKEN}\nkey=ghp_{'b' * 36}\n")
    text = _synced(project)
    assert "export GITHUB_TOKEN=" in text and TOKEN not in text and "ghp_bbbb" not in text


def test_a_huge_file_is_not_read_whole(project: Path) -> None:
    with (project / "huge.log").open("wb") as fh:
        fh.truncate(64 * 1024 * 1024)  # sparse: instant to make, 64 MiB to read whole
    store = RecallStore(None)
    tracemalloc.start()
    try:
        sync_workspace(project, store, RecallSettings(index_workspace=True, workspace_max_file_bytes=100_000))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024, f"peak {peak:,} bytes while skipping a 64 MiB file"


def test_a_folder_swapped_for_a_symlink_never_indexes_outside_text(project: Path) -> None:
    """The race of #27 (51 of 5,361 refreshes indexed outside text): a folder flips between a real
    folder and a symlink to the outside while the index refreshes."""
    outside = project.parent / "outside"
    real = project / "d"
    real.mkdir()
    (real / "secret.txt").write_text("inside text\n")
    leaks = 0
    deadline = time.monotonic() + 3.0
    with flipping(real, outside):
        while time.monotonic() < deadline:
            leaks += CANARY in _synced(project)
    assert leaks == 0


def test_an_untrusted_project_cannot_switch_on_workspace_indexing(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / ".mtagent").mkdir()
    (project / ".mtagent" / "config.toml").write_text("[recall]\nindex_workspace = true\nchunk_lines = 30\n")
    settings = load_settings(project)
    assert settings.recall.index_workspace is False and settings.recall.chunk_lines == 30
    err = capsys.readouterr().err
    assert "recall.index_workspace" in err and "not trusted" in err and err.count("\n") == 1
    trust.set_trust(project, True)
    assert load_settings(project).recall.index_workspace is True


def test_a_configured_secret_in_a_workspace_file_is_not_stored(project: Path) -> None:
    """The session's indexer redacts with the configured secrets too, not only the environment's."""
    from mtagent.config import Settings
    from mtagent.context.recall.sink import session_index

    (project / "notes.txt").write_text("staging passphrase: plain-words-staging-pw\n")
    settings = Settings.model_validate({"recall": {"index_workspace": True},
                                        "security": {"redact_values": ["plain-words-staging-pw"]}})
    index = session_index(project, "s1", settings, transcript=lambda: project / "s1.jsonl", home=project / "home")
    assert index is not None
    try:
        index.indexer.refresh()
        text = _indexed(index.indexer.store)
    finally:
        index.close()
    assert "staging passphrase" in text and "plain-words-staging-pw" not in text


def test_a_deeply_nested_workspace_is_a_short_walk_not_a_crash(project: Path) -> None:
    try:
        here = project
        for _ in range(1_400):  # far past the recursion limit, under PATH_MAX
            here = here / "a"
            here.mkdir()
        (here / "deep.txt").write_text("too deep to index\n")
        (project / "a" / "near.txt").write_text("near enough\n")
        text = _synced(project)
    finally:
        remove_nested(project)
    assert "near enough" in text and "ordinary text" in text and "too deep" not in text


@contextmanager
def flipping(real: Path, outside: Path) -> Iterator[None]:
    """While the block runs, a thread keeps swapping the folder ``real`` for a symlink to
    ``outside`` and back (the real folder parked beside it as ``<name>.real``)."""
    spare = real.with_name(f"{real.name}.real")
    stop = threading.Event()

    def flip() -> None:
        while not stop.is_set():
            try:
                os.rename(real, spare)
                os.symlink(outside, real)
                time.sleep(0.001)
                os.unlink(real)
                os.rename(spare, real)
                time.sleep(0.001)
            except OSError:
                pass

    flipper = threading.Thread(target=flip, daemon=True)
    flipper.start()
    try:
        yield
    finally:
        stop.set()
        flipper.join()


def remove_nested(top: Path, files: tuple[str, ...] = ()) -> None:
    """Remove a chain of nested ``a`` folders bottom-up without recursion (``shutil.rmtree`` and
    pytest's temp-folder cleanup recurse, and would fail on it after the test)."""
    chain = [top]
    while (chain[-1] / "a").is_dir():
        chain.append(chain[-1] / "a")
    for folder in reversed(chain[1:]):
        for entry in os.listdir(folder):
            if entry != "a":
                os.unlink(folder / entry)
        os.rmdir(folder)
