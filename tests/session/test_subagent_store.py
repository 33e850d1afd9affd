"""With storage.backend = postgres a subagent's transcript also goes into the store (issue 17 × 18).

The child's transcript is written through the Store's public API, as an artifact of its parent
session (``subagents/<child-id>.jsonl``) when the child ends, so another worker can read it; a
mirror of the parent (``sessions show`` in PostgreSQL mode) finds it there for the tree.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("psycopg", reason="the postgres extra is not installed: pip install -e '.[dev]'")

from mtagent import paths  # noqa: E402
from mtagent.agent.scripted import ScriptedChatModel, tool_call  # noqa: E402
from mtagent.agent.session import AgentSession  # noqa: E402
from mtagent.agent.subagents.tree import subagent_tree  # noqa: E402
from mtagent.config import load_settings  # noqa: E402
from mtagent.session.files_store import FilesStore  # noqa: E402
from mtagent.session.postgres.store import PostgresStore  # noqa: E402

REPORT = json.dumps({"outcome": "success", "summary": "login redirects to /home"})


def _run(project: Path, settings) -> tuple[str, str, Path]:
    parent = ScriptedChatModel([tool_call("task", {"description": "find login", "prompt": "where is login?"},
                                          id="call_t"), "done"])
    with AgentSession.create(project, model=parent, settings=settings, approval="auto") as session:
        session.subagents.model_factory = lambda profile, request: (
            ScriptedChatModel([tool_call("grep", {"pattern": "login"}), REPORT]), "scripted:child")
        session.run_turn("explore")
        (entry,) = session.subagents.children.values()
        child_id = entry.child_id
        return session.session_id, child_id, paths.subagent_transcript_path(project, session.session_id, child_id)


def test_a_childs_transcript_is_kept_in_the_postgres_store(project: Path, pg_dsn: str, tenant: str) -> None:
    (project / "auth.py").write_text("def login():\n    return '/home'\n")
    settings = load_settings(project, overrides={"storage": {"backend": "postgres", "dsn": pg_dsn, "tenant": tenant}})
    sid, child_id, local = _run(project, settings)
    store = PostgresStore(pg_dsn, tenant=tenant, max_artifact_bytes=64 * 1024 * 1024, pool_max_size=2)
    try:
        key = paths.project_hash(project)
        relative = f"subagents/{child_id}.jsonl"
        assert relative in store.list_artifacts(key, sid)
        stored = store.read_artifact(key, sid, relative)
        assert child_id not in store.sessions(key)  # a child is not a session of its own in the listing
    finally:
        store.close()
    assert stored == local.read_text(encoding="utf-8")
    records = [json.loads(line) for line in stored.splitlines()]
    assert records[0]["type"] == "session_start" and records[0]["parent_session_id"] == sid
    assert any(r.get("role") == "assistant" and r.get("content") == REPORT for r in records)


def test_the_tree_reads_a_child_from_the_parents_mirrored_artifacts(project: Path) -> None:
    """A mirror holds the parent's transcript and artifacts, not the child's own file: the tree finds it there."""
    sid, child_id, local = _run(project, load_settings(project))
    text = local.read_text(encoding="utf-8")
    local.unlink()  # as on another worker: only what the store held
    FilesStore(tenant="t", max_artifact_bytes=1 << 20, home=paths.mtagent_home()).write_artifact(
        paths.project_hash(project), sid, f"subagents/{child_id}.jsonl", text)
    (node,) = subagent_tree(paths.session_transcript_path(project, sid))
    assert node.problem is None and node.path is not None and node.path.read_text(encoding="utf-8") == text
    assert node.usage["model_calls"] == 2
