"""The artifact folder is a path boundary, not a string prefix.

A planted bug checked ``str(target).startswith(str(root))``: a sibling folder whose name starts
with the store's name (``../<store>-evil/x.txt``) was accepted — and ``read_tool_result`` passes
model-supplied paths to it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import ToolMessage

from mtagent.config import Settings
from mtagent.errors import ArtifactPathError
from mtagent.session.artifacts import ArtifactStore
from mtagent.tools import ToolSession, default_tools


def _store_and_evil_sibling(tmp_path: Path) -> tuple[ArtifactStore, str]:
    store = ArtifactStore(tmp_path / "artifacts")
    store.write_text("tool-results/ok.txt", "inside")
    evil = tmp_path / "artifacts-evil"
    evil.mkdir()
    (evil / "x.txt").write_text("secret outside the store")
    return store, "../artifacts-evil/x.txt"


def test_a_sibling_folder_sharing_the_name_prefix_is_refused(tmp_path: Path) -> None:
    store, sneaky = _store_and_evil_sibling(tmp_path)
    with pytest.raises(ArtifactPathError, match="escapes"):
        store.resolve(sneaky)
    with pytest.raises(ArtifactPathError):
        store.read_text(sneaky)
    with pytest.raises(ArtifactPathError):
        store.resolve("tool-results/../../artifacts-evil/x.txt")
    assert store.resolve("tool-results/ok.txt") == (tmp_path / "artifacts" / "tool-results" / "ok.txt").resolve()


def test_read_tool_result_refuses_the_sibling_folder(tmp_path: Path) -> None:
    store, sneaky = _store_and_evil_sibling(tmp_path)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    tools = {t.name: t for t in default_tools(workspace, ToolSession(artifacts=store, sink=[]), Settings(),
                                              include_memory=False)}
    tool = tools["read_tool_result"]

    def call(path: str, call_id: str) -> ToolMessage:
        msg = tool.invoke({"name": "read_tool_result", "args": {"path": path}, "id": call_id, "type": "tool_call"})
        assert isinstance(msg, ToolMessage)
        return msg

    refused = call(sneaky, "c1")
    assert "secret outside" not in str(refused.content) and refused.status == "error"
    assert "inside" in str(call("tool-results/ok.txt", "c2").content)
