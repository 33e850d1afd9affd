"""`mtagent sessions migrate`, `mtagent audit`, and the agent on each backend (checkpoints, audit)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from mtagent import paths
from mtagent.agent.scripted import ScriptedChatModel, tool_call
from mtagent.agent.session import AgentSession
from mtagent.cli.app import app
from mtagent.config import load_settings
from mtagent.session import schema
from mtagent.session.files_store import FilesStore

runner = CliRunner()


def _files_session(project: Path, sid: str, n: int) -> list[dict]:
    store = FilesStore()
    key = paths.project_hash(project)
    records = [schema.session_start_record(sid, str(project), "m", "0")]
    records += [schema.message_to_record(schema.HumanMessage(f"m {i}", id=f"{sid}-m{i}")) for i in range(n)]
    with store.open_writer(key, sid) as writer:
        for r in records:
            writer.append(r)
    store.write_artifact(key, sid, "tool-results/c1.txt", "full output " * 100)
    store.write_session_memory(key, sid, "# notes")
    store.write_memory(key, "MEMORY.md", "- remember this")
    store.close()
    return records


def _migrate(*args: str, env: dict[str, str] | None = None) -> dict:
    result = runner.invoke(app, ["sessions", "migrate", *args, "--json"], env=env)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_migrate_to_postgres_and_back_is_idempotent_and_resumable(project: Path, pg_dsn: str, tenant: str,
                                                                 tmp_path: Path, monkeypatch) -> None:
    from mtagent.session.postgres.store import PostgresStore

    monkeypatch.setenv("MTAGENT_STORAGE__TENANT", tenant)
    records = _files_session(project, "s-a", 30)
    key = paths.project_hash(project)
    pg = PostgresStore(pg_dsn, tenant=tenant, pool_max_size=1)
    with pg.open_writer(key, "s-a") as writer:  # an earlier run stopped after 10 records
        for r in records[:10]:
            writer.append(r)
    first = _migrate("--to", "postgres", "--dsn", pg_dsn)
    assert first["records_copied"] == 21 and first["sessions"][0]["records_present"] == 10
    assert first["artifacts_copied"] == 1 and first["memories_copied"] == 1
    assert [e.record for e in pg.read_entries(key, "s-a")] == records
    assert pg.read_artifact(key, "s-a", "tool-results/c1.txt") == "full output " * 100
    assert pg.read_session_memory(key, "s-a") == "# notes" and pg.read_memory(key, "MEMORY.md") == "- remember this"
    again = _migrate("--to", "postgres", "--dsn", pg_dsn)
    assert again["records_copied"] == 0 and again["artifacts_copied"] == 0 and again["memories_copied"] == 0
    assert pg.record_count(key, "s-a") == len(records)

    monkeypatch.setenv("MTAGENT_HOME", str(tmp_path / "other-home"))  # a new machine: back to files
    back = _migrate("--to", "files", "--dsn", pg_dsn, "--cwd", str(project))
    assert back["records_copied"] == len(records)
    assert [e.record for e in FilesStore().read_entries(key, "s-a")] == records
    audit = runner.invoke(app, ["audit", "--json"], env={"MTAGENT_STORAGE__BACKEND": "postgres",
                                                         "MTAGENT_STORAGE__DSN": pg_dsn})
    assert audit.exit_code == 0, audit.output
    assert [e["action"] for e in json.loads(audit.output)] == ["migrate"]
    pg.close()


def test_migrate_refuses_a_diverged_session(project: Path, pg_dsn: str, tenant: str, monkeypatch) -> None:
    from mtagent.session.postgres.store import PostgresStore

    monkeypatch.setenv("MTAGENT_STORAGE__TENANT", tenant)
    _files_session(project, "s-b", 3)
    with PostgresStore(pg_dsn, tenant=tenant, pool_max_size=1) as pg:
        with pg.open_writer(paths.project_hash(project), "s-b") as writer:
            writer.append(schema.session_start_record("s-b", "/elsewhere", "m", "0"))
    result = runner.invoke(app, ["sessions", "migrate", "--to", "postgres", "--dsn", pg_dsn])
    assert result.exit_code == 2 and "diverged" in result.output and "Traceback" not in result.output


def test_migrate_without_a_dsn_or_with_a_bad_target_is_a_usage_error() -> None:
    result = runner.invoke(app, ["sessions", "migrate", "--to", "postgres"])
    assert result.exit_code == 2 and "MTAGENT_STORAGE__DSN" in result.output
    result = runner.invoke(app, ["sessions", "migrate", "--to", "s3", "--dsn", "postgresql://x@127.0.0.1:1/x"])
    assert result.exit_code == 2 and "postgres or files" in result.output


def test_another_tenant_sees_nothing_through_the_cli(project: Path, pg_dsn: str, tenant: str,
                                                     tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MTAGENT_STORAGE__TENANT", tenant)
    _files_session(project, "s-c", 5)
    assert _migrate("--to", "postgres", "--dsn", pg_dsn)["records_copied"] == 6
    monkeypatch.setenv("MTAGENT_STORAGE__TENANT", f"{tenant}-other")
    monkeypatch.setenv("MTAGENT_HOME", str(tmp_path / "other-home"))
    out = _migrate("--to", "files", "--dsn", pg_dsn)
    assert out["sessions"] == [] and out["records_copied"] == 0
    audit = runner.invoke(app, ["audit", "--json"], env={"MTAGENT_STORAGE__BACKEND": "postgres",
                                                         "MTAGENT_STORAGE__DSN": pg_dsn})
    assert json.loads(audit.output) == []


def _scripted_turn(project: Path, settings) -> str:
    model = ScriptedChatModel([tool_call("ls", {"path": "."}, id="ok1"),
                               tool_call("shell", {"command": "rm -f README.md"}, id="rm1"), "done"])
    with AgentSession.create(project, model=model, settings=settings, approval="auto") as session:
        session.run_turn("look around, then clean up")
        return session.session_id


def test_the_agent_audits_approvals_and_denials_in_files(project: Path) -> None:
    settings = load_settings(project, overrides={"agent": {"approval": {"shell:rm *": "deny"}}})
    sid = _scripted_turn(project, settings)
    result = runner.invoke(app, ["audit", "--json", "--session", sid])
    events = json.loads(result.output)
    assert ("tool.approved", "ls") in [(e["action"], e["detail"].get("tool")) for e in events]
    denied = [e for e in events if e["action"] == "tool.denied"]
    assert denied and denied[0]["detail"]["tool"] == "shell" and "shell:rm *" in denied[0]["detail"]["reason"]
    assert (project / "README.md").exists()
    table = runner.invoke(app, ["audit", "--action", "tool.denied"])
    assert table.exit_code == 0 and "tool.denied" in table.output and "tool.approved" not in table.output


def test_the_agent_checkpoints_and_audits_in_postgres(project: Path, pg_dsn: str, tenant: str) -> None:
    import psycopg

    settings = load_settings(project, overrides={
        "agent": {"approval": {"shell:rm *": "deny"}},
        "storage": {"backend": "postgres", "dsn": pg_dsn, "tenant": tenant}})
    sid = _scripted_turn(project, settings)
    with psycopg.connect(pg_dsn) as conn:
        threads = conn.execute("SELECT count(*) FROM checkpoints WHERE thread_id = %s", (f"{tenant}/{sid}",))
        assert threads.fetchone()[0] > 0
    result = runner.invoke(app, ["audit", "--json"], env={"MTAGENT_STORAGE__BACKEND": "postgres",
                                                          "MTAGENT_STORAGE__DSN": pg_dsn,
                                                          "MTAGENT_STORAGE__TENANT": tenant})
    actions = [e["action"] for e in json.loads(result.output)]
    assert "tool.approved" in actions and "tool.denied" in actions


def test_an_export_is_audited(project: Path) -> None:
    _files_session(project, "s-x", 2)
    result = runner.invoke(app, ["sessions", "export", "s-x", "--cwd", str(project), "--format", "md"])
    assert result.exit_code == 0, result.output
    events = json.loads(runner.invoke(app, ["audit", "--json", "--action", "export"]).output)
    assert [(e["session_id"], e["detail"]["format"], e["detail"]["to"]) for e in events] == [("s-x", "md", "stdout")]


def test_an_agent_session_in_postgres_resumes_on_another_machine(project: Path, pg_dsn: str, tenant: str,
                                                                 tmp_path: Path, monkeypatch) -> None:
    (project / "big.txt").write_text("".join(f"needle line {i}\n" for i in range(4000)))
    settings = load_settings(project, overrides={"storage": {"backend": "postgres", "dsn": pg_dsn, "tenant": tenant}})
    model = ScriptedChatModel([tool_call("grep", {"pattern": "needle"}, id="g1"), "found many"])
    with AgentSession.create(project, model=model, settings=settings, approval="auto") as session:
        session.run_turn("find the needles")
        sid = session.session_id
    local = paths.history_dir(project)
    assert not local.is_dir() or not list(local.glob("*.jsonl")), "the transcript lives in PostgreSQL only"

    monkeypatch.setenv("MTAGENT_HOME", str(tmp_path / "another-machine"))
    with AgentSession.resume(None, project, model=ScriptedChatModel(["continuing"]), settings=settings) as again:
        assert again.session_id == sid
        results = [m for m in again.conversation.messages if getattr(m, "tool_call_id", None) == "g1"]
        assert results and "persisted-output" in str(results[0].content)
        records = [r for r in _pg_records(pg_dsn, tenant, project, sid) if r.get("role") == "tool"]
        artifact = records[0]["toolUseResult"]["artifact"]
        assert "needle line 999\n" in again.artifacts.read_text(artifact)  # fetched from the store
        again.run_turn("go on")
    assert [r.get("content") for r in _pg_records(pg_dsn, tenant, project, sid)][-1] == "continuing"


def _pg_records(dsn: str, tenant: str, project: Path, sid: str) -> list[dict]:
    from mtagent.session.postgres.store import PostgresStore

    with PostgresStore(dsn, tenant=tenant, pool_max_size=1) as store:
        return [e.record for e in store.read_entries(paths.project_hash(project), sid)]


def test_trust_decisions_are_audited(project: Path) -> None:
    assert runner.invoke(app, ["trust", str(project), "--yes"]).exit_code == 0
    assert runner.invoke(app, ["trust", str(project), "--revoke"]).exit_code == 0
    events = json.loads(runner.invoke(app, ["audit", "--json", "--action", "trust"]).output)
    assert [(e["detail"]["project"], e["detail"]["trusted"]) for e in events] == \
        [(str(project.resolve()), True), (str(project.resolve()), False)]


def test_an_untrusted_repository_cannot_choose_the_store(project: Path) -> None:
    (project / ".mtagent").mkdir()
    (project / ".mtagent" / "config.toml").write_text(
        '[storage]\nbackend = "postgres"\ndsn = "postgresql://attacker@evil.example/x"\n')
    settings = load_settings(project)
    assert settings.storage.backend == "files" and settings.storage.dsn is None


def test_memory_writes_from_the_cli_are_audited(project: Path) -> None:
    assert runner.invoke(app, ["memory", "add", "use uv, not pip", "--project", "--cwd", str(project)]).exit_code == 0
    assert runner.invoke(app, ["memory", "remove", "1", "--project", "--cwd", str(project)]).exit_code == 0
    events = json.loads(runner.invoke(app, ["audit", "--json", "--action", "memory.write"]).output)
    assert [e["detail"]["change"] for e in events] == ["add", "remove"]


def test_a_session_in_use_is_skipped_and_copied_by_the_next_run(project: Path, pg_dsn: str, tenant: str,
                                                                monkeypatch) -> None:
    monkeypatch.setenv("MTAGENT_STORAGE__TENANT", tenant)
    _files_session(project, "s-busy", 2)
    _files_session(project, "s-free", 2)
    with FilesStore().open_writer(paths.project_hash(project), "s-busy"):  # a live agent holds it
        result = runner.invoke(app, ["sessions", "migrate", "--to", "postgres", "--dsn", pg_dsn, "--json"])
    assert result.exit_code == 1
    out = json.loads(result.stdout)
    assert [s["session_id"] for s in out["sessions"]] == ["s-free"] and "s-busy" in out["in_use"][0]
    assert [s["session_id"] for s in _migrate("--to", "postgres", "--dsn", pg_dsn)["sessions"]
            if s["records_copied"]] == ["s-busy"]
