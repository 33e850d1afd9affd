"""The LangChain middleware keeps its sessions in the Store it is given (PostgreSQL here)."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from mtagent import paths
from mtagent.agent.scripted import ScriptedChatModel, reply, tool_call
from mtagent.config import load_settings
from mtagent.integrations.langchain import MTContextMiddleware
from mtagent.integrations.thread_session import session_id_for_thread

pytest.importorskip("psycopg", reason="the postgres extra is not installed: pip install -e '.[dev]'")


@tool
def big(n: int) -> str:
    """Return n lines of output."""
    return "".join(f"line {i}\n" for i in range(n))


def _run(project: Path, store, thread: str, script: list) -> None:
    with MTContextMiddleware(settings=load_settings(project), project_root=project, store=store) as middleware:
        agent = create_agent(ScriptedChatModel(script), [big], middleware=[middleware], checkpointer=InMemorySaver())
        agent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": thread}})


def test_the_middleware_writes_to_the_store_it_is_given(project: Path, pg_dsn: str, tenant: str) -> None:
    from mtagent.session.postgres.store import PostgresStore

    key, sid = paths.project_hash(project), session_id_for_thread("thread-1")
    with PostgresStore(pg_dsn, tenant=tenant, pool_max_size=2) as store:
        _run(project, store, "thread-1", [tool_call("big", {"n": 12_000}, id="b1"), reply("done")])
        records = [e.record for e in store.read_entries(key, sid)]
        assert records[0]["type"] == "session_start" and records[0]["source"] == "langchain-middleware"
        tool_record = next(r for r in records if r.get("role") == "tool")
        artifact = tool_record["toolUseResult"]["artifact"]
        assert "line 11999" in store.read_artifact(key, sid, artifact)
        assert records[-1]["content"] == "done"

        _run(project, store, "thread-1", [reply("again")])  # a second worker resumes the thread
        again = [e.record for e in store.read_entries(key, sid)]
        assert sum(r["type"] == "session_start" for r in again) == 1 and again[-1]["content"] == "again"
        ids = [r["id"] for r in again if r["type"] == "transcript_message"]
        assert len(ids) == len(set(ids))
    assert not paths.history_dir(project).is_dir() or not list(paths.history_dir(project).glob("*.jsonl"))
    with PostgresStore(pg_dsn, tenant=f"{tenant}-b", pool_max_size=1) as other:
        assert other.sessions(key) == [] and other.list_artifacts(key, sid) == []


def test_the_middleware_follows_storage_backend_without_a_store(project: Path, pg_dsn: str, tenant: str,
                                                                monkeypatch) -> None:
    from mtagent.session.postgres.store import PostgresStore

    monkeypatch.setenv("MTAGENT_STORAGE__BACKEND", "postgres")
    monkeypatch.setenv("MTAGENT_STORAGE__DSN", pg_dsn)
    monkeypatch.setenv("MTAGENT_STORAGE__TENANT", tenant)
    _run(project, None, "thread-2", [reply("hello")])
    with PostgresStore(pg_dsn, tenant=tenant, pool_max_size=1) as store:
        records = [e.record for e in store.read_entries(paths.project_hash(project), session_id_for_thread("thread-2"))]
    assert records[-1]["content"] == "hello"
