"""Recall's catch-up folder comes from the process's open store, not a store opened per catch-up
(in PostgreSQL mode that was a connection, a schema check and a pool for every ``recall`` call)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtagent import paths
from mtagent.config import Settings
from mtagent.session import store as store_module
from mtagent.session.store import recall_history, shared_store


def test_catch_ups_reuse_the_store_the_session_holds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "_SHARED", {})
    opened: list[object] = []
    real = store_module.open_store
    monkeypatch.setattr(store_module, "open_store", lambda *a, **k: opened.append(a) or real(*a, **k))
    settings = Settings()
    project = tmp_path / "project"
    session_store = shared_store(settings)  # what an agent session opens its session through
    history = recall_history(settings, project)
    folders = {history() for _ in range(3)}
    assert folders == {session_store.history_folder(paths.project_hash(project))} == {paths.history_dir(project)}
    assert len(opened) == 1  # the session's own
