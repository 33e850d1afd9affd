"""A hard link put inside a session's artifact folder is not read — not by the artifact store, so
not by the recall index nor by ``mtagent recall`` (#33, round-two residue): its other name may be
anywhere (``ln ~/.ssh/id_rsa …/tool-results/x.txt``), like every other confined open."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from transcripts import write_exchange
from typer.testing import CliRunner

from mtagent.cli.app import app
from mtagent.errors import ArtifactPathError
from mtagent.session import schema
from mtagent.session.artifacts import ArtifactStore

OUTSIDE = "outside-private-canary hardlinked-content"


def _linked(store: ArtifactStore, tmp_path: Path, rel: str) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text(OUTSIDE + "\n")
    target = store.root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    os.link(outside, target)


def test_the_store_refuses_a_hard_link_and_a_symlinked_last_component(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path / "artifacts")
    store.write_text("tool-results/ok.txt", "fine\n")
    assert store.read_text("tool-results/ok.txt") == "fine\n"
    _linked(store, tmp_path, "tool-results/linked.txt")
    for read in (lambda: store.read_text("tool-results/linked.txt"),
                 lambda: store.read_head("tool-results/linked.txt", 100)):
        with pytest.raises(ArtifactPathError, match="hard link"):
            read()
    with pytest.raises(ArtifactPathError):
        store.read_text("tool-results/missing.txt")


def test_recall_neither_indexes_nor_prints_a_hard_linked_artifact(project: Path, tmp_path: Path) -> None:
    sid = "s1"
    store = ArtifactStore.for_session(project, sid)
    rel = "tool-results/c1.txt"
    _linked(store, tmp_path, rel)
    write_exchange(project, "show the canary output", "shell", {"command": "x"},
                   f'<persisted-output tool="shell" path="{rel}">preview</persisted-output>',
                   schema.tool_result_artifact_record("c1", "shell", rel, original_chars=40, stored_bytes=40,
                                                      truncated=False, sha256=None), sid=sid)
    result = CliRunner().invoke(app, ["recall", "private canary", "--scope", "artifacts",
                                      "--cwd", str(project)])
    assert result.exit_code == 0, result.output
    assert "hardlinked-content" not in result.output and "outside-private-canary" not in result.output
