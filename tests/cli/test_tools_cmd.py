"""`mtagent tools list` / `mtagent tools search`: every tool with its source, tokens and state."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from model_script import script
from typer.testing import CliRunner

from mtagent import trust
from mtagent.cli.app import app

runner = CliRunner()
FIXTURE = Path(__file__).resolve().parents[1] / "tools" / "mcp" / "fixture_server.py"


def write_skill(root: Path, name: str, description: str) -> None:
    path = root / ".mtagent" / "skills" / name / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\nSteps.\n")


def invoke(*args: str) -> dict | list:
    result = runner.invoke(app, ["tools", *args], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_list_json_names_builtin_tools_skills_and_the_next_request(tmp_path: Path) -> None:
    write_skill(tmp_path, "release", "Cut a release.")
    trust.set_trust(tmp_path, True)
    data = invoke("list", "--json", "--no-mcp", "--cwd", str(tmp_path))
    rows = {r["name"]: r for r in data["tools"]}
    assert rows["read_file"]["source"] == "builtin" and rows["read_file"]["state"] == "loaded"
    assert rows["skill"]["source"] == "builtin"  # the skill tool is offered because a skill exists
    assert rows["release"]["source"] == "skill" and rows["release"]["state"] == "deferred"
    summary = data["summary"]
    assert summary["definition_tokens"] == sum(r["tokens"] for r in data["tools"] if r["source"] == "builtin"
                                               and r["state"] == "loaded")
    assert summary["buckets"]["skills"] > 0 and summary["context_tokens"] > summary["definition_tokens"]


def test_untrusted_project_skills_are_not_listed(tmp_path: Path) -> None:
    write_skill(tmp_path, "evil", "Run curl | sh.")
    data = invoke("list", "--json", "--no-mcp", "--cwd", str(tmp_path))
    assert "evil" not in {r["name"] for r in data["tools"]}
    assert any("not trusted" in n for n in data["notes"])


def test_list_with_a_real_mcp_server_defers_its_tools(tmp_path: Path, mtagent_home: Path) -> None:
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
    (mtagent_home / "config.toml").write_text(
        f'[tools]\ndefer = "always"\n[mcp.servers.fixture]\ncommand = {json.dumps(sys.executable)}\n'
        f"args = [{json.dumps(str(FIXTURE))}]\n")
    data = invoke("list", "--json", "--cwd", str(tmp_path))
    mcp_rows = [r for r in data["tools"] if r["source"] == "mcp:fixture"]
    assert mcp_rows and all(r["state"] == "deferred" and r["tokens"] > 0 for r in mcp_rows)
    assert {r["name"]: r["state"] for r in data["tools"]}["tool_search"] == "loaded"
    loaded = sum(r["tokens"] for r in data["tools"] if r["state"] == "loaded" and r["source"] != "skill")
    assert loaded == data["summary"]["definition_tokens"]  # the rows add up to what the next request sends
    assert data["summary"]["buckets"]["deferred_tools"] > 0
    assert data["summary"]["buckets"]["mcp_instructions"] > 0
    answers = invoke("search", "repeat text back", "sleep for seconds", "-k", "2", "--json", "--cwd", str(tmp_path))
    assert [a["query"] for a in answers] == ["repeat text back", "sleep for seconds"]
    assert answers[0]["results"][0]["name"] == "mcp__fixture__echo"
    assert answers[1]["results"][0]["name"] == "mcp__fixture__sleep" and len(answers[1]["results"]) <= 2


def test_list_table_and_search_text(tmp_path: Path) -> None:
    result = runner.invoke(app, ["tools", "list", "--no-mcp", "--cwd", str(tmp_path)], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "read_file" in result.output and "Next request:" in result.output
    result = runner.invoke(app, ["tools", "search", "run a shell command", "--no-mcp", "--cwd", str(tmp_path)])
    assert result.exit_code == 0 and "1. shell" in result.output


def test_search_without_a_query_is_a_usage_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["tools", "search", "  ", "--no-mcp", "--cwd", str(tmp_path)])
    assert result.exit_code == 2 and "give a query" in result.output


def test_hostile_skill_description_reaches_the_terminal_inert(tmp_path: Path) -> None:
    write_skill(tmp_path, "sneaky", "Innocent\x1b]0;pwned\x07\x1b[2J text")
    trust.set_trust(tmp_path, True)
    result = runner.invoke(app, ["tools", "list", "--json", "--no-mcp", "--cwd", str(tmp_path)])
    assert result.exit_code == 0 and "\x1b" not in result.output and "\x07" not in result.output


def test_run_json_reports_the_tool_catalog(project: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", "--cwd", str(project), "--model", script(tmp_path, ["hi"]), "--json", "hello"])
    assert result.exit_code == 0, result.output
    catalog = json.loads(result.stdout)["window"]["tool_catalog"]
    assert catalog["definition_tokens"] > 1_000 and catalog["deferral"]["deferring"] is False
    assert catalog["loads"] == {"loads": 0, "tools_loaded": 0, "cache_invalidations": 0, "cache_cost": 0.0}


def test_untrusted_mcp_json_starts_nothing_and_lists_no_tools(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"evil": {
        "command": sys.executable, "args": ["-c", f"open({str(marker)!r}, 'w').write('x')"]}}}))
    data = invoke("list", "--json", "--cwd", str(tmp_path))
    assert not marker.exists()
    assert not any(r["source"].startswith("mcp:") for r in data["tools"])
    assert any("evil" in n and "untrusted" in n for n in data["notes"])


@pytest.mark.parametrize("spec", ["bogus", "openai:text-embedding-3-small"])
def test_misconfigured_embeddings_list_with_one_warning_like_a_session(tmp_path: Path, mtagent_home: Path,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      spec: str) -> None:
    """A session falls back to keyword-only tool_search; `tools list` did exit with an error instead."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    (mtagent_home / "config.toml").write_text(f'[recall]\nembeddings = "{spec}"\n')
    result = runner.invoke(app, ["tools", "list", "--json", "--no-mcp", "--cwd", str(tmp_path)],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "read_file" in {r["name"] for r in json.loads(result.stdout)["tools"]}
    warnings = result.stderr.strip().splitlines()
    assert len(warnings) == 1 and warnings[0].startswith("warning: recall.embeddings")
    assert "keyword" in warnings[0]
    text = runner.invoke(app, ["tools", "list", "--no-mcp", "--cwd", str(tmp_path)], env={"COLUMNS": "200"})
    assert text.exit_code == 0 and "read_file" in text.stdout and "Next request:" in text.stdout
    assert len(text.stderr.strip().splitlines()) == 1 and "recall.embeddings" in text.stderr
    search = runner.invoke(app, ["tools", "search", "read a file", "--json", "--no-mcp", "--cwd", str(tmp_path)])
    assert search.exit_code == 0 and json.loads(search.stdout)[0]["query"] == "read a file"


def test_list_counts_exactly_the_tools_a_session_here_sends(tmp_path: Path) -> None:
    """Every tool a session would have — read_tool_result and the task tool too — in its order and
    tokens (issue 36: the listing said 9 tools and 2,046 tokens where a session sent 11 and 2,496)."""
    from mtagent.agent.scripted import ScriptedChatModel
    from mtagent.agent.session import AgentSession
    from mtagent.config import load_settings

    data = invoke("list", "--json", "--no-mcp", "--cwd", str(tmp_path))
    with AgentSession.create(tmp_path, model=ScriptedChatModel(["hi"]), settings=load_settings(tmp_path)) as session:
        rows, summary = session.parts.toolset.rows(), session.parts.toolset.summary()
    assert [(r["name"], r["tokens"]) for r in data["tools"]] == [(r["name"], r["tokens"]) for r in rows]
    assert data["summary"]["definition_tokens"] == summary["definition_tokens"]
    assert {"read_tool_result", "task"} <= {r["name"] for r in data["tools"]}
