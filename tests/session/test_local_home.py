"""Each tenant's local state has its own folders from the start; nothing shared is renamed (issue 25)."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mtagent import paths
from mtagent.config import Settings
from mtagent.context.recall.indexer import index_path
from mtagent.context.static import memory
from mtagent.errors import ConfigError
from mtagent.session.local import local_home, redact_dsn, shared_home
from mtagent.session.store_artifacts import pull_memory, push_memory

DSN = "postgresql://worker:s3cret-pass@db.example:5432/fleet"


def _pg(tenant: str, dsn: str = DSN) -> Settings:
    return Settings.model_validate({"storage": {"backend": "postgres", "dsn": dsn, "tenant": tenant}})


def test_the_files_backend_keeps_the_classic_layout(mtagent_home: Path) -> None:
    assert local_home(Settings()) == mtagent_home
    assert local_home(Settings.model_validate({"storage": {"tenant": "acme"}})) == mtagent_home


def test_each_tenant_and_each_server_gets_its_own_home_without_the_password(mtagent_home: Path) -> None:
    homes = {local_home(_pg("acme")), local_home(_pg("beta")), local_home(_pg("acme", DSN.replace("fleet", "other")))}
    assert len(homes) == 3
    for home in homes:
        assert home.parent == mtagent_home / "mirror" and "s3cret" not in str(home)
    assert local_home(_pg("acme")) == shared_home(redact_dsn(DSN), "acme")
    project = mtagent_home / "proj"
    folders = {paths.project_memory_dir(project, home) for home in homes} | {paths.project_memory_dir(project)}
    assert len(folders) == 4  # memory: one folder per tenant, and the files backend's
    assert len({index_path(project, "acme", home=h) for h in homes}) == 3  # recall index too


@pytest.mark.parametrize("tenant", ["../evil", "a/b", "", "x" * 65, "a\0b", ".hidden"])
def test_a_hostile_tenant_never_becomes_a_path(tenant: str) -> None:
    with pytest.raises(ConfigError):
        shared_home("postgresql://h/db", tenant)


@pytest.mark.parametrize("dsn", ["postgresql://u:p%40ss@h/db", "host=h password=topsecret dbname=db"])
def test_the_password_never_reaches_a_folder_name(dsn: str) -> None:
    assert "p%40ss" not in redact_dsn(dsn) and "topsecret" not in redact_dsn(dsn)


@dataclass
class _Store:
    """The part of a Store that memory pulls and pushes use: one tenant's memory rows."""

    tenant: str
    local_home: Path
    rows: dict[str, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def list_memory(self, project: str) -> list[str]:
        with self.lock:
            return sorted(self.rows)

    def read_memory(self, project: str, name: str) -> str | None:
        with self.lock:
            return self.rows.get(name)

    def write_memory(self, project: str, name: str, text: str) -> None:
        with self.lock:
            self.rows[name] = text


def test_many_sessions_of_two_tenants_open_side_by_side(mtagent_home: Path, tmp_path: Path) -> None:
    """The old code swapped one shared ``memory`` folder per tenant by renaming it; sessions of two
    tenants opening at once raced on it (``Directory not empty``). Now each pulls into its own."""
    project = tmp_path / "proj"
    stores = [_Store(who, local_home(_pg(who)), {"MEMORY.md": f"- fact of {who}\n"}) for who in ("acme", "beta")]
    errors: list[BaseException] = []
    barrier = threading.Barrier(16)

    def session(store: _Store) -> None:
        try:
            barrier.wait()
            for _ in range(25):
                folder = paths.project_memory_dir(project, store.local_home)  # the tenant's own
                pull_memory(store, "proj", folder)
                push_memory(store, "proj", folder)
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=session, args=(stores[i % 2],)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for store in stores:
        text = memory.load_memory_text("project", project, 50, home=store.local_home)
        assert text == f"- fact of {store.tenant}"
    shared = paths.project_state_dir(project)
    assert not shared.exists()  # nothing was written to (or renamed in) the files backend's folder


def test_memory_commands_edit_the_configured_tenants_folder(mtagent_home: Path, tmp_path: Path) -> None:
    """`mtagent memory add|list` act on the memory a PostgreSQL tenant's sessions read and push,
    not on the files backend's folder (no server is needed: the folder follows from the settings)."""
    from typer.testing import CliRunner

    from mtagent.cli.app import app
    from mtagent.testing.pg_server import free_port

    dsn = f"postgresql://worker@127.0.0.1:{free_port()}/fleet"  # nothing listens: the audit row is skipped
    env = {"MTAGENT_STORAGE__BACKEND": "postgres", "MTAGENT_STORAGE__DSN": dsn, "MTAGENT_STORAGE__TENANT": "acme",
           "MTAGENT_STORAGE__CONNECT_TIMEOUT_SECONDS": "1"}
    project = tmp_path / "proj"
    project.mkdir()
    runner = CliRunner()
    added = runner.invoke(app, ["memory", "add", "--project", "tests run with uv", "--cwd", str(project)], env=env)
    assert added.exit_code == 0, added.output
    tenant_index = paths.project_memory_dir(project, local_home(_pg("acme", dsn))) / "MEMORY.md"
    assert "tests run with uv" in tenant_index.read_text()
    assert not paths.project_memory_dir(project).exists()
    listed = runner.invoke(app, ["memory", "list", "--project", "--json", "--cwd", str(project)], env=env)
    assert [e["text"] for e in json.loads(listed.output)] == ["tests run with uv"]
