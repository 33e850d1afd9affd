"""In PostgreSQL mode recall finds what another worker wrote: its catch-up reads the tenant's mirror
of the project (refreshed from the store), and another tenant finds nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("psycopg")

from mtagent import paths  # noqa: E402
from mtagent.cli.app import app  # noqa: E402
from mtagent.session import schema  # noqa: E402
from mtagent.session.postgres.store import PostgresStore  # noqa: E402

runner = CliRunner()


def _env(dsn: str, tenant: str) -> dict[str, str]:
    return {"MTAGENT_STORAGE__BACKEND": "postgres", "MTAGENT_STORAGE__DSN": dsn, "MTAGENT_STORAGE__TENANT": tenant}


def test_recall_finds_a_session_another_worker_wrote_and_only_for_its_tenant(tmp_path: Path, pg_dsn: str,
                                                                              tenant: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
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


def test_a_session_in_postgres_catches_its_tenants_index_up_when_it_closes(tmp_path: Path, pg_dsn: str,
                                                                            tenant: str) -> None:
    """No record is indexed as it is written; the closing session reads its own transcript (the
    tenant's mirror of its rows) into the tenant's local index."""
    import sqlite3

    from mtagent.config import Settings
    from mtagent.context.recall import index_path
    from mtagent.session.local import local_home

    project = tmp_path / "project"
    project.mkdir()
    script = tmp_path / "s.json"
    script.write_text(json.dumps(["noted"]), encoding="utf-8")
    ran = runner.invoke(app, ["run", "--cwd", str(project), "--model", f"scripted:{script}",
                              "the relay is marmot_relay_7731"], env=_env(pg_dsn, tenant))
    assert ran.exit_code == 0, ran.output
    settings = Settings.model_validate({"storage": {"backend": "postgres", "dsn": pg_dsn, "tenant": tenant}})
    conn = sqlite3.connect(index_path(project, tenant, home=local_home(settings)))
    try:
        rows = conn.execute("SELECT role FROM items WHERE text LIKE '%marmot_relay_7731%'").fetchall()
    finally:
        conn.close()
    assert rows == [("user",)]
