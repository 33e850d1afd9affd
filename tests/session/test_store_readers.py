"""PostgreSQL mode end to end: the readers (sessions list/show/export, the REPL picker, the UI, recall),
session and long-term memory through the store, checkpoint tenancy, and the DSN's password."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from model_script import script
from typer.testing import CliRunner

pytest.importorskip("psycopg", reason="the postgres extra is not installed: pip install -e '.[dev]'")

from mtagent import paths  # noqa: E402
from mtagent.agent.scripted import ScriptedChatModel, tool_call  # noqa: E402
from mtagent.agent.session import AgentSession  # noqa: E402
from mtagent.cli.app import app  # noqa: E402
from mtagent.config import load_settings  # noqa: E402
from mtagent.errors import SessionNotFound  # noqa: E402
from mtagent.session import schema  # noqa: E402
from mtagent.session.local import local_home  # noqa: E402
from mtagent.session.postgres.store import PostgresStore  # noqa: E402

runner = CliRunner()
CANARY = "canary-pw-7f3e"


def _env(dsn: str, tenant: str) -> dict[str, str]:
    return {"MTAGENT_STORAGE__BACKEND": "postgres", "MTAGENT_STORAGE__DSN": dsn, "MTAGENT_STORAGE__TENANT": tenant}


def _pg_session(dsn: str, tenant: str, project: Path, sid: str, n: int = 3) -> list[dict]:
    """A session that exists only in PostgreSQL (written by 'another worker')."""
    key = paths.project_hash(project)
    records = [schema.session_start_record(sid, str(project), "m-test", "0")]
    records += [schema.message_to_record(schema.HumanMessage(f"hello {i} from {sid}", id=f"{sid}-m{i}"))
                for i in range(n)]
    records.append(schema.boundary_record(summary=f"summary of {sid}", first_kept_id=f"{sid}-m{n - 1}",
                                          boundary_id=f"cb-{sid}"))
    with PostgresStore(dsn, tenant=tenant, pool_max_size=1) as store:
        with store.open_writer(key, sid) as writer:
            for r in records:
                writer.append(r)
        store.write_artifact(key, sid, "tool-results/c1.txt", f"artifact body of {sid}")
    return records


def test_sessions_list_show_export_read_postgres(project: Path, pg_dsn: str, tenant: str) -> None:
    records = _pg_session(pg_dsn, tenant, project, "01PGAAAA", 3)
    _pg_session(pg_dsn, tenant, project, "01PGBBBB", 1)
    env, cwd = _env(pg_dsn, tenant), ["--cwd", str(project)]
    listed = runner.invoke(app, ["sessions", "list", "--json", *cwd], env=env)
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.output)
    assert [(r["id"], r["messages"], r["compactions"], r["model"]) for r in rows] == \
        [("01PGAAAA", 3, 1, "m-test"), ("01PGBBBB", 1, 1, "m-test")]
    assert rows[0]["started"] and rows[0]["size_bytes"] > 100
    assert not paths.history_dir(project).exists(), "nothing was read from (or written to) the files"

    shown = runner.invoke(app, ["sessions", "show", "01PGA", *cwd], env=env)  # a unique prefix
    assert shown.exit_code == 0, shown.output
    assert "hello 2 from 01PGAAAA" in shown.output and "summary of 01PGAAAA" in shown.output
    exported = runner.invoke(app, ["sessions", "export", "01PGAAAA", *cwd], env=env)
    assert exported.exit_code == 0, exported.output
    assert [json.loads(line) for line in exported.stdout.splitlines()] == records
    _pg_session(pg_dsn, tenant, project, "01PGAAAA-more", 1)  # another session arrives; the mirror follows
    with PostgresStore(pg_dsn, tenant=tenant, pool_max_size=1) as store, \
            store.open_writer(paths.project_hash(project), "01PGAAAA") as writer:
        writer.append(schema.message_to_record(schema.HumanMessage("a later message", id="late-1")))
    again = runner.invoke(app, ["sessions", "export", "01PGAAAA", "--format", "md", *cwd], env=env)
    assert "a later message" in again.stdout and "hello 0 from 01PGAAAA" in again.stdout
    audit = json.loads(runner.invoke(app, ["audit", "--json", "--action", "export"], env=env).output)
    assert [e["session_id"] for e in audit] == ["01PGAAAA", "01PGAAAA"]


def test_another_tenant_sees_no_session_through_list_show_or_export(project: Path, pg_dsn: str,
                                                                    tenant: str) -> None:
    _pg_session(pg_dsn, tenant, project, "01PGSECRET", 2)
    env, cwd = _env(pg_dsn, f"{tenant}-b"), ["--cwd", str(project)]
    listed = runner.invoke(app, ["sessions", "list", "--json", *cwd], env=env)
    assert listed.exit_code == 0 and json.loads(listed.output) == []
    for command in (["show", "01PGSECRET"], ["export", "01PGSECRET"], ["show", "latest"]):
        result = runner.invoke(app, ["sessions", *command, *cwd], env=env)
        assert result.exit_code != 0 and "hello" not in result.output and "Traceback" not in result.output


def test_a_bad_mirror_is_rebuilt_from_the_store(project: Path, pg_dsn: str, tenant: str) -> None:
    from mtagent.session.store_catalog import mirror_session

    records = _pg_session(pg_dsn, tenant, project, "01PGMIRROR", 2)
    key = paths.project_hash(project)
    with PostgresStore(pg_dsn, tenant=tenant, pool_max_size=1) as store:
        path = mirror_session(store, key, "01PGMIRROR")
        path.write_bytes(b'{"type":"forged"}\n' * 2 + path.read_bytes().splitlines(keepends=True)[-1])
        path = mirror_session(store, key, "01PGMIRROR")
        assert [json.loads(line) for line in path.read_bytes().splitlines()] == records
        with open(path, "ab") as fh:  # a refresh interrupted mid-line
            fh.write(b'{"type":"transcript_mess')
        path = mirror_session(store, key, "01PGMIRROR")
        assert [json.loads(line) for line in path.read_bytes().splitlines()] == records
        assert oct(path.parents[2].stat().st_mode & 0o777) == "0o700"


def test_the_repl_picker_and_resume_by_prefix_read_postgres(project: Path, pg_dsn: str, tenant: str,
                                                           tmp_path: Path, monkeypatch) -> None:
    from rich.console import Console

    from mtagent.cli.repl_host import ReplHost
    from mtagent.cli.session_options import SessionOptions

    for name, value in _env(pg_dsn, tenant).items():
        monkeypatch.setenv(name, value)
    model = script(tmp_path, ["hi", "again"])
    with SessionOptions(cwd=project, model=model).open_session() as session:
        session.run_turn("hello")
        sid = session.session_id
    monkeypatch.setenv("MTAGENT_HOME", str(tmp_path / "another-worker"))
    host = ReplHost(console=Console(record=True), options=SessionOptions(cwd=project, model=model))
    assert [row.session_id for row in host.list_sessions()] == [sid]
    with SessionOptions(cwd=project, resume=sid[:-4]).open_session() as resumed:  # a prefix; the recorded script
        assert resumed.session_id == sid and resumed.model_name == model
    with SessionOptions(cwd=project, continue_=True).open_session() as latest:
        assert latest.session_id == sid
    monkeypatch.setenv("MTAGENT_STORAGE__TENANT", f"{tenant}-b")  # another tenant: none of it
    assert host.list_sessions() == []
    with pytest.raises(SessionNotFound):
        SessionOptions(cwd=project, resume=sid, model=model).open_session()


def test_the_ui_lists_and_shows_postgres_sessions_of_its_tenant_only(project: Path, pg_dsn: str,
                                                                     tenant: str) -> None:
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from mtagent.cli.ui_cmd import _shared_sessions
    from mtagent.ui.app import UiOptions, create_app

    _pg_session(pg_dsn, tenant, project, "01PGUI", 2)
    _pg_session(pg_dsn, f"{tenant}-b", project, "01PGOTHER", 2)
    settings = load_settings(project, overrides={"storage": {"backend": "postgres", "dsn": pg_dsn,
                                                             "tenant": tenant}})
    options = UiOptions(cwd=project, settings=settings)
    with _shared_sessions(settings, options):
        client = TestClient(create_app(options), base_url="http://127.0.0.1")
        page = client.get("/")
        assert page.status_code == 200 and "01PGUI" in page.text and "01PGOTHER" not in page.text
        _pg_session(pg_dsn, tenant, project, "01PGUI2", 1)
        assert "01PGUI2" in client.get("/").text  # refreshed per listing
        key = paths.project_hash(project)
        detail = client.get(f"/p/{key}/s/01PGUI")
        assert detail.status_code == 200 and "01PGUI" in detail.text
        artifact = client.get(f"/p/{key}/s/01PGUI/raw", params={"path": "tool-results/c1.txt"})
        assert artifact.status_code == 200 and artifact.text == "artifact body of 01PGUI"
        assert client.get(f"/p/{key}/s/01PGOTHER").status_code == 404


def test_session_and_long_term_memory_live_in_postgres(project: Path, pg_dsn: str, tenant: str,
                                                       tmp_path: Path, monkeypatch) -> None:
    settings = load_settings(project, overrides={"storage": {"backend": "postgres", "dsn": pg_dsn,
                                                             "tenant": tenant}})
    key = paths.project_hash(project)
    with AgentSession.create(project, model=ScriptedChatModel(["hi", "again"]), settings=settings) as session:
        sid = session.session_id
        session.artifacts.session_memory_path.parent.mkdir(parents=True, exist_ok=True)
        session.artifacts.session_memory_path.write_text("# Session Title\nnotes from worker one\n")
        session.sink.append(schema.session_memory_update_record(
            "session-memory/summary.md", last_summarized_message_id=None, tokens=5, sections={}))
        with PostgresStore(pg_dsn, tenant=tenant, pool_max_size=1) as store:
            assert "notes from worker one" in (store.read_session_memory(key, sid) or "")
        memory = paths.project_memory_dir(project, local_home(settings))  # the tenant's own folder
        memory.mkdir(parents=True, exist_ok=True)
        (memory / "MEMORY.md").write_text("- use uv, not pip\n")
        (memory / "..hidden").write_text("never pushed")
        session.run_turn("hello")  # the end of the turn saves the memory
    with PostgresStore(pg_dsn, tenant=tenant, pool_max_size=1) as store:
        assert store.read_memory(key, "MEMORY.md") == "- use uv, not pip\n"
        assert store.list_memory(key) == ["MEMORY.md"]
        store.write_session_memory(key, sid, "# Session Title\nnotes edited on worker two\n")

    monkeypatch.setenv("MTAGENT_HOME", str(tmp_path / "another-worker"))
    with AgentSession.resume(sid, project, model=ScriptedChatModel(["ok"]), settings=settings) as again:
        assert "worker two" in again.artifacts.session_memory_path.read_text()
        assert (paths.project_memory_dir(project, local_home(settings)) / "MEMORY.md").read_text() \
            == "- use uv, not pip\n"


def test_migrate_moves_session_memory_and_memory_and_is_idempotent(project: Path, pg_dsn: str, tenant: str,
                                                                   monkeypatch) -> None:
    from mtagent.session.files_store import FilesStore

    monkeypatch.setenv("MTAGENT_STORAGE__TENANT", tenant)
    key = paths.project_hash(project)
    files = FilesStore()
    with files.open_writer(key, "s-mem") as writer:
        writer.append(schema.session_start_record("s-mem", str(project), "m", "0"))
    files.write_session_memory(key, "s-mem", "# notes v1")
    files.write_memory(key, "MEMORY.md", "- fact")
    files.write_memory(key, "topic.md", "- topic fact")
    out = json.loads(runner.invoke(app, ["sessions", "migrate", "--to", "postgres", "--dsn", pg_dsn, "--json"]).output)
    assert out["memories_copied"] == 2 and out["sessions"][0]["session_memory_copied"]
    again = json.loads(runner.invoke(app, ["sessions", "migrate", "--to", "postgres", "--dsn", pg_dsn,
                                           "--json"]).output)
    assert again["memories_copied"] == 0 and not again["sessions"][0]["session_memory_copied"]
    files.write_session_memory(key, "s-mem", "# notes v2")
    third = json.loads(runner.invoke(app, ["sessions", "migrate", "--to", "postgres", "--dsn", pg_dsn,
                                           "--json"]).output)
    assert third["sessions"][0]["session_memory_copied"]
    with PostgresStore(pg_dsn, tenant=tenant, pool_max_size=1) as store:
        assert store.read_session_memory(key, "s-mem") == "# notes v2"
        assert store.list_memory(key) == ["MEMORY.md", "topic.md"]


def test_checkpoints_are_kept_apart_by_row_level_security(project: Path, pg_dsn: str, tenant: str) -> None:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    from mtagent.session.postgres.connect import tenant_configurer
    from mtagent.session.postgres.migrations import APP_ROLE

    settings = load_settings(project, overrides={"storage": {"backend": "postgres", "dsn": pg_dsn,
                                                             "tenant": tenant}})
    model = ScriptedChatModel([tool_call("ls", {"path": "."}, id="c1"), "done"])
    with AgentSession.create(project, model=model, settings=settings, approval="auto") as session:
        session.run_turn("look")
        sid = session.session_id
    thread = {"configurable": {"thread_id": f"{tenant}/{sid}", "checkpoint_ns": ""}}

    def connection(who: str) -> psycopg.Connection:
        conn = psycopg.connect(pg_dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row)
        tenant_configurer(who, APP_ROLE)(conn)
        return conn

    with connection(tenant) as mine, connection(f"{tenant}-b") as theirs, psycopg.connect(pg_dsn) as admin:
        assert PostgresSaver(mine).get_tuple(thread) is not None
        assert PostgresSaver(theirs).get_tuple(thread) is None  # the saver's own path
        for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
            total = admin.execute(f"SELECT count(*) FROM {table} WHERE tenant = %s", (tenant,)).fetchone()[0]
            assert total > 0 or table == "checkpoint_blobs"
            assert theirs.execute(f"SELECT count(*) AS n FROM {table} WHERE thread_id LIKE %s",
                                  (f"{tenant}/%",)).fetchone()["n"] == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # nor can it write under another tenant
            theirs.execute("INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx,"
                           " channel, type, blob, tenant) VALUES ('x', '', 'y', 'z', 0, 'c', 't', ''::bytea, %s)",
                           (tenant,))


@pytest.mark.parametrize("form", ["url", "keywords"])
def test_the_dsn_password_is_never_printed(project: Path, form: str, caplog) -> None:
    from mtagent.testing.pg_server import free_port

    port = free_port()  # nothing listens there
    dsn = (f"postgresql://worker:{CANARY}@127.0.0.1:{port}/fleet" if form == "url"
           else f"host=127.0.0.1 port={port} user=worker password={CANARY} dbname=fleet")
    env = {"MTAGENT_STORAGE__BACKEND": "postgres", "MTAGENT_STORAGE__DSN": dsn,
           "MTAGENT_STORAGE__CONNECT_TIMEOUT_SECONDS": "2"}
    shown = runner.invoke(app, ["config", "show", "--cwd", str(project)], env=env)
    assert shown.exit_code == 0 and "[storage]" in shown.output and CANARY not in shown.output
    for command in (["sessions", "list", "--cwd", str(project)], ["sessions", "show", "latest", "--cwd", str(project)],
                    ["audit"], ["sessions", "migrate", "--to", "files"]):
        result = runner.invoke(app, command, env=env)
        assert result.exit_code != 0, command
        assert "cannot use PostgreSQL" in result.output and "127.0.0.1" in result.output, result.output
        assert CANARY not in result.output and "Traceback" not in result.output
    assert CANARY not in caplog.text


def test_two_tenants_on_one_machine_share_no_memory_or_cache(project: Path, pg_dsn: str, tenant: str) -> None:
    def settings_for(who: str):
        return load_settings(project, overrides={"storage": {"backend": "postgres", "dsn": pg_dsn, "tenant": who}})

    files_era = paths.project_memory_dir(project)
    files_era.mkdir(parents=True)
    (files_era / "MEMORY.md").write_text("- files-era fact\n")  # the files backend's: no tenant adopts it
    memory_a = paths.project_memory_dir(project, local_home(settings_for(tenant)))
    memory_b = paths.project_memory_dir(project, local_home(settings_for(f"{tenant}-b")))
    assert len({files_era, memory_a, memory_b}) == 3  # each tenant's folder is its own, from the start
    with AgentSession.create(project, model=ScriptedChatModel(["a"]), settings=settings_for(tenant)) as a:
        assert not (memory_a / "MEMORY.md").exists()
        memory_a.mkdir(parents=True, exist_ok=True)
        (memory_a / "MEMORY.md").write_text("- secret fact of tenant a\n")
        a.run_turn("hi")
        a_cache = a.artifacts.root
    with AgentSession.create(project, model=ScriptedChatModel(["b"]), settings=settings_for(f"{tenant}-b")) as b:
        assert not (memory_b / "MEMORY.md").exists(), "tenant a's memory is not in tenant b's prompt"
        assert "secret fact" not in json.dumps([m.content for m in b.static.build().messages])
        assert not b.artifacts.root.is_relative_to(a_cache.parents[3])  # the tenant's own cache folder
        b.run_turn("hi")
    assert (files_era / "MEMORY.md").read_text() == "- files-era fact\n"  # nothing moved or renamed
    assert [p.name for p in files_era.parent.iterdir() if p.name.startswith("memory")] == ["memory"]
    key = paths.project_hash(project)
    with PostgresStore(pg_dsn, tenant=f"{tenant}-b", pool_max_size=1) as store_b:
        assert store_b.list_memory(key) == []
    with PostgresStore(pg_dsn, tenant=tenant, pool_max_size=1) as store_a:
        assert store_a.read_memory(key, "MEMORY.md") == "- secret fact of tenant a\n"
    with AgentSession.create(project, model=ScriptedChatModel(["a2"]), settings=settings_for(tenant)) as a2:
        assert (memory_a / "MEMORY.md").read_text() == "- secret fact of tenant a\n"  # pulled back from a's rows
        assert "secret fact of tenant a" in json.dumps([m.content for m in a2.static.build().messages])


def test_the_middleware_of_another_tenant_on_the_same_thread_starts_afresh(project: Path, pg_dsn: str,
                                                                         tenant: str) -> None:
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from mtagent.agent.scripted import reply
    from mtagent.integrations.langchain import MTContextMiddleware
    from mtagent.integrations.thread_session import session_id_for_thread

    key, sid = paths.project_hash(project), session_id_for_thread("shared-thread")  # the same id for both

    def run(who: str) -> list[dict]:
        with PostgresStore(pg_dsn, tenant=who, pool_max_size=2) as store:
            with MTContextMiddleware(settings=load_settings(project), project_root=project, store=store) as mw:
                agent = create_agent(ScriptedChatModel([reply(f"answer for {who}")]), [], middleware=[mw],
                                     checkpointer=InMemorySaver())
                agent.invoke({"messages": [HumanMessage(f"question from {who}")]},
                             {"configurable": {"thread_id": "shared-thread"}})
            return [e.record for e in store.read_entries(key, sid)]

    mine, theirs = run(tenant), run(f"{tenant}-b")
    assert f"answer for {tenant}" in [r.get("content") for r in mine]
    texts = json.dumps(theirs)
    assert f"answer for {tenant}\"" not in texts and f"question from {tenant}\"" not in texts
    assert sum(r["type"] == "session_start" for r in theirs) == 1


def test_a_worker_login_role_acting_as_the_app_role_runs_and_lists_sessions(project: Path, fresh_db: str,
                                                                            tenant: str) -> None:
    """The set-up the fleet doc describes: the owner migrates once, workers log in as their own role."""
    import uuid

    import psycopg

    def settings_for(dsn: str):
        return load_settings(project, overrides={"storage": {"backend": "postgres", "dsn": dsn, "tenant": tenant}})

    with AgentSession.create(project, model=ScriptedChatModel(["one"]), settings=settings_for(fresh_db)) as first:
        first.run_turn("hi")
        sid = first.session_id
    role = f"worker_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(fresh_db, autocommit=True) as admin:
        admin.execute(f'CREATE ROLE "{role}" LOGIN')
        admin.execute(f'GRANT mtagent_tenant TO "{role}"')
    worker = fresh_db.replace("mtagent_admin@", f"{role}@")
    with AgentSession.resume(sid, project, model=ScriptedChatModel(["two"]), settings=settings_for(worker)) as again:
        again.run_turn("go on")
    listed = runner.invoke(app, ["sessions", "list", "--json", "--cwd", str(project)], env=_env(worker, tenant))
    assert listed.exit_code == 0, listed.output
    assert [(r["id"], r["messages"]) for r in json.loads(listed.output)] == [(sid, 4)]


def test_export_fetches_no_artifacts_and_show_does(project: Path, pg_dsn: str, tenant: str) -> None:

    _pg_session(pg_dsn, tenant, project, "01PGEXP", 1)
    env, cwd = _env(pg_dsn, tenant), ["--cwd", str(project)]
    with PostgresStore(pg_dsn, tenant=tenant, pool_max_size=1) as store:
        artifact = Path(store.local_home) / "history" / paths.project_hash(project) / "artifacts" / "01PGEXP" / \
            "tool-results" / "c1.txt"
    assert runner.invoke(app, ["sessions", "export", "01PGEXP", *cwd], env=env).exit_code == 0
    assert not artifact.exists()
    assert runner.invoke(app, ["sessions", "show", "01PGEXP", "--full", *cwd], env=env).exit_code == 0
    assert artifact.read_text() == "artifact body of 01PGEXP"


def test_recall_finds_a_session_another_worker_wrote_and_only_for_its_tenant(project: Path, pg_dsn: str,
                                                                              tenant: str) -> None:
    """Recall's catch-up reads the tenant's mirror of the project (refreshed from the store)."""
    with PostgresStore(pg_dsn, tenant=tenant, pool_max_size=1) as store, \
            store.open_writer(paths.project_hash(project), "01RECALLPG") as writer:
        writer.append(schema.session_start_record("01RECALLPG", str(project), "m-test", "0"))
        writer.append(schema.message_to_record(
            schema.HumanMessage("the flaky test is quokka_canary_batch_loader", id="pg-m1")))
    assert not paths.history_dir(project).exists()  # nothing of it on this worker's files
    found = runner.invoke(app, ["recall", "quokka_canary_batch_loader", "--json", "--cwd", str(project)],
                          env=_env(pg_dsn, tenant))
    assert found.exit_code == 0, found.output
    hits = json.loads(found.stdout)
    assert [h["session"] for h in hits][:1] == ["01RECALLPG"]
    other = runner.invoke(app, ["recall", "quokka_canary_batch_loader", "--json", "--cwd", str(project)],
                          env=_env(pg_dsn, tenant + "-other"))
    assert other.exit_code == 0, other.output
    assert json.loads(other.stdout) == []


def test_a_session_in_postgres_catches_its_tenants_index_up_when_it_closes(project: Path, tmp_path: Path,
                                                                            pg_dsn: str, tenant: str) -> None:
    """No record is indexed as it is written; the closing session reads its own transcript (the
    tenant's mirror of its rows) into the tenant's local index."""
    import sqlite3

    from mtagent.config import Settings
    from mtagent.context.recall import index_path

    ran = runner.invoke(app, ["run", "--cwd", str(project), "--model", script(tmp_path, ["noted"]),
                              "the relay is marmot_relay_7731"], env=_env(pg_dsn, tenant))
    assert ran.exit_code == 0, ran.output
    settings = Settings.model_validate({"storage": {"backend": "postgres", "dsn": pg_dsn, "tenant": tenant}})
    conn = sqlite3.connect(index_path(project, tenant, home=local_home(settings)))
    try:
        rows = conn.execute("SELECT role FROM items WHERE text LIKE '%marmot_relay_7731%'").fetchall()
    finally:
        conn.close()
    assert rows == [("user",)]
