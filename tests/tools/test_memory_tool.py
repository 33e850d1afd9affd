"""The save_memory tool writes only to the memory lists and addresses spec 003 v1.2's namespaces (global,
project, user, team), with a key and a TTL; a bad fact or a hostile namespace from the model is one short
error and writes nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtagent import paths
from mtagent.agent.approval import ApprovalPolicy
from mtagent.cli.app import app
from mtagent.context.static import memory
from mtagent.tools.memory_tool import build_save_memory_tool

HOSTILE = ["../../etc/passwd", "..", "../global", "project/../global", "glo\x00bal", "team\x00",
           "x" * 100_000, "", " project", "PROJECT", "tenant"]


def _files(*roots: Path) -> set[Path]:
    return {p for root in roots if root.exists() for p in root.rglob("*") if p.is_file()}


def test_the_model_addresses_each_namespace_with_key_and_ttl(tmp_path: Path) -> None:
    tool = build_save_memory_tool(tmp_path)
    schema = tool.args_schema.model_json_schema()  # type: ignore[union-attr]
    assert schema["properties"]["namespace"]["enum"] == list(memory.SCOPES)
    for ns in memory.SCOPES:
        out = tool.invoke({"fact": f"fact for {ns}", "namespace": ns})
        assert out.startswith(f"Saved to {ns} memory"), out
        assert [e.text for e in memory.list_memories(ns, tmp_path)] == [f"fact for {ns}"]
    out = tool.invoke({"fact": "deploys use ArgoRollout", "namespace": "team", "key": "deploy", "ttl": "30d"})
    assert out.startswith("Saved to team memory")
    entry = memory.list_memories("team", tmp_path)[-1]
    assert entry.meta.key == "deploy" and entry.meta.expires_at is not None and not entry.expired
    # The old argument still works (transcripts and prompts that say scope=...).
    assert tool.invoke({"fact": "old style", "scope": "project"}).startswith("Saved to project memory")


@pytest.mark.parametrize("name", HOSTILE, ids=lambda n: repr(n[:20]))
def test_a_hostile_namespace_is_a_short_error_and_writes_nothing(tmp_path: Path, name: str) -> None:
    home = Path(os.environ["MTAGENT_HOME"])
    before = _files(home, tmp_path)
    out = build_save_memory_tool(tmp_path).invoke({"fact": "attacker fact", "namespace": name})
    assert out.startswith("Error: unknown memory namespace") and len(out) < 300, out[:300]
    assert "global, project, user, team" in out
    assert _files(home, tmp_path) == before
    assert all(memory.list_memories(ns, tmp_path) == [] for ns in memory.SCOPES)


def test_hostile_key_and_ttl_are_errors(tmp_path: Path) -> None:
    tool = build_save_memory_tool(tmp_path)
    assert tool.invoke({"fact": "f", "namespace": "project", "key": "../x\x00" * 50}).startswith("Error:")
    assert tool.invoke({"fact": "f", "namespace": "project", "ttl": "forever and ever"}).startswith("Error:")
    assert memory.list_memories("project", tmp_path) == []


def test_approval_asks_for_namespaces_that_reach_every_later_session() -> None:
    policy = ApprovalPolicy()
    assert policy.decide("save_memory", {"fact": "f", "namespace": "project"}).decision == "allow"
    assert policy.decide("save_memory", {"fact": "f", "namespace": "team"}).decision == "allow"
    for args in ({"namespace": "global"}, {"namespace": "user"}, {"namespace": "../x"}, {}, {"scope": "global"}):
        assert policy.decide("save_memory", {"fact": "f", **args}).decision == "ask", args
    assert policy.decide("save_memory", {"fact": "f", "scope": "project"}).decision == "allow"


@pytest.mark.parametrize("name", ["../../etc", "..", "team\x00", "y" * 5_000])
def test_cli_rejects_a_hostile_namespace_in_one_line(tmp_path: Path, name: str) -> None:
    result = CliRunner().invoke(app, ["memory", "add", "a fact", "--namespace", name, "--cwd", str(tmp_path)])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and len(lines[0]) < 300 and "unknown memory namespace" in lines[0], result.output[:400]
    assert not paths.project_memory_dir(tmp_path).exists() or memory.list_memories("project", tmp_path) == []


def test_save_memory_tool_global_and_project(tmp_path: Path) -> None:
    tool = build_save_memory_tool(tmp_path)
    assert tool.name == "save_memory"
    assert "Saved to global" in tool.invoke({"fact": "user likes short answers"})
    assert "Saved to project" in tool.invoke({"fact": "kernel code is in src/k", "scope": "project"})
    assert "nothing changed" in tool.invoke({"fact": "User likes short answers."})
    assert memory.memory_file("global").active() == ["user likes short answers"]
    assert (paths.project_memory_dir(tmp_path) / "MEMORY.md").read_text().count("kernel code is in src/k") == 1


def test_save_memory_tool_reports_bad_fact_instead_of_raising(tmp_path: Path) -> None:
    tool = build_save_memory_tool(tmp_path)
    assert tool.invoke({"fact": "  "}).startswith("Error:")
