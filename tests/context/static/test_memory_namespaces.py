"""Memory v1.2: namespaces, TTL (expires_at) and conflict resolution by key."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from mtagent.context.static import memory, memory_resolve
from mtagent.context.static.memory_meta import FactMeta, parse_ttl, split_meta
from mtagent.context.static.tiers import StaticContext
from mtagent.errors import UsageError

PAST = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
FUTURE = dt.datetime(2100, 1, 1, tzinfo=dt.UTC)


def test_namespaces_are_isolated_files(tmp_path: Path) -> None:
    paths = {ns: memory.memory_path(ns, tmp_path) for ns in memory.SCOPES}
    assert len(set(paths.values())) == 4
    memory.save_memory("team uses trunk-based development", "team", tmp_path)
    memory.save_memory("I like short answers", "user", tmp_path)
    assert [e.text for e in memory.list_memories("team", tmp_path)] == ["team uses trunk-based development"]
    assert [e.text for e in memory.list_memories("user", tmp_path)] == ["I like short answers"]
    assert memory.list_memories("project", tmp_path) == []
    assert memory.list_memories("global", tmp_path) == []


def test_unknown_namespace_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="namespace"):
        memory.memory_path("tenant", tmp_path)  # type: ignore[arg-type]


def test_expired_fact_is_not_injected_but_listed_as_expired(tmp_path: Path) -> None:
    memory.save_memory("staging is at 10.0.0.7", "project", tmp_path, meta=FactMeta(expires_at=PAST))
    memory.save_memory("prod deploys need approval", "project", tmp_path, meta=FactMeta(expires_at=FUTURE))
    file = memory.memory_file("project", tmp_path)
    assert file.active() == ["prod deploys need approval"]
    expired = [e for e in memory.list_memories("project", tmp_path) if e.expired]
    assert [e.text for e in expired] == ["staging is at 10.0.0.7"]
    injected = memory.load_memory_text("project", tmp_path, 200)
    assert "10.0.0.7" not in injected and "prod deploys need approval" in injected
    assert "<!--" not in injected  # metadata never reaches the model
    session = StaticContext(tmp_path).build().session_context.content
    assert "10.0.0.7" not in session and "prod deploys" in session


def test_newer_fact_on_the_same_key_supersedes_and_plan_records_it(tmp_path: Path) -> None:
    old = FactMeta(key="test-cmd", at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    new = FactMeta(key="test-cmd", at=dt.datetime(2026, 6, 1, tzinfo=dt.UTC))
    memory.save_memory("tests run with make test", "project", tmp_path, meta=old)
    memory.save_memory("tests run with uv run pytest", "project", tmp_path, meta=new)
    res = memory_resolve.resolve(tmp_path)
    assert res.texts("project") == ["tests run with uv run pytest"]
    assert [e.text for e in res.superseded] == ["tests run with make test"]
    (conflict,) = res.conflicts
    assert conflict.key == "key:test-cmd" and conflict.winner == "memory:project:2"
    assert conflict.losers == ("memory:project:1",) and "newer" in conflict.reason
    parts = StaticContext(tmp_path).build()
    assert "make test" not in parts.session_context.content
    assert any(c.key == "key:test-cmd" for c in parts.conflicts)


def test_higher_authority_wins_even_when_older(tmp_path: Path) -> None:
    memory.save_memory("indent with 2 spaces", "team", tmp_path,
                       meta=FactMeta(key="indent", at=dt.datetime(2025, 1, 1, tzinfo=dt.UTC)))
    memory.save_memory("indent with tabs", "user", tmp_path,
                       meta=FactMeta(key="indent", at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC)))
    res = memory_resolve.resolve(tmp_path)
    assert res.texts("team") == ["indent with 2 spaces"] and res.texts("user") == []
    assert "higher authority" in res.conflicts[0].reason


def test_hostile_metadata_is_ignored_not_fatal() -> None:
    text, meta = split_meta("fact <!-- key=../../etc; expires=not-a-date; authority=root; at=x -->")
    assert text == "fact" and meta.empty
    assert split_meta("no comment here")[1].empty


def test_ttl_forms() -> None:
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    assert parse_ttl("30d", now) == now + dt.timedelta(days=30)
    assert parse_ttl("2027-01-31", now) == dt.datetime(2027, 1, 31, tzinfo=dt.UTC)
    assert parse_ttl(None) is None
    with pytest.raises(UsageError):
        parse_ttl("soon")


def test_adding_same_fact_with_metadata_updates_it_in_place(tmp_path: Path) -> None:
    memory.save_memory("use ruff", "project", tmp_path)
    result = memory.save_memory("use ruff", "project", tmp_path, meta=FactMeta(key="lint"))
    assert not result.added and result.entry.meta.key == "lint"
    assert len(memory.list_memories("project", tmp_path)) == 1
