"""A real PostgreSQL server for the storage tests, and a ``store`` fixture over both backends.

The server is started once per test session (``initdb`` + ``pg_ctl`` in a temp dir, on a free
loopback port; as root it runs as the ``postgres``/``nobody`` user) and stopped at the end.
Each test gets its own tenant, so tests never see each other's rows. Without server binaries
the PostgreSQL cases skip with the reason; `.ci/run` installs Debian's ``postgresql``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from mtagent.testing.pg_server import create_database, find_binaries, temporary_server

NO_SERVER = ("PostgreSQL server binaries (initdb, pg_ctl) not found in PATH or /usr/lib/postgresql/*/bin; "
             "install Debian's postgresql (.ci/run does) to run the PostgreSQL storage tests")


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """The superuser DSN of a throw-away server."""
    if find_binaries() is None:
        pytest.skip(NO_SERVER)
    pytest.importorskip("psycopg", reason="the postgres extra is not installed: pip install -e '.[dev]'")
    with temporary_server() as dsn:
        yield dsn


@pytest.fixture(scope="session")
def pg_dsn(pg_server: str) -> str:
    """One database shared by the storage tests (tenants keep them apart)."""
    return create_database(pg_server, "mtagent_tests")


@pytest.fixture
def fresh_db(pg_server: str) -> str:
    """A database of its own, for migration tests."""
    return create_database(pg_server, f"m_{uuid.uuid4().hex[:12]}")


@pytest.fixture
def tenant() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


def make_store(backend: str, *, home: Path, dsn: str | None, tenant: str, max_bytes: int = 64 * 1024 * 1024):
    if backend == "files":
        from mtagent.session.files_store import FilesStore

        return FilesStore(tenant=tenant, max_artifact_bytes=max_bytes, home=home)
    from mtagent.session.postgres.store import PostgresStore

    assert dsn is not None
    return PostgresStore(dsn, tenant=tenant, max_artifact_bytes=max_bytes, pool_max_size=2)


@pytest.fixture
def project(project: Path) -> Path:
    """tests/conftest.py's project folder with a README (the CLI and reader tests run their sessions in it)."""
    (project / "README.md").write_text("hello\n")
    return project


@pytest.fixture(params=["files", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store_dsn(backend: str, request: pytest.FixtureRequest) -> str | None:
    return request.getfixturevalue("pg_dsn") if backend == "postgres" else None


@pytest.fixture
def store(backend: str, store_dsn: str | None, mtagent_home: Path, tenant: str) -> Iterator[object]:
    s = make_store(backend, home=mtagent_home, dsn=store_dsn, tenant=tenant)
    yield s
    s.close()


@pytest.fixture
def store_factory(backend: str, store_dsn: str | None, mtagent_home: Path):
    """``factory(tenant, max_bytes=...)``: another store of the parametrized backend."""
    made: list[object] = []

    def factory(tenant: str, max_bytes: int = 64 * 1024 * 1024) -> object:
        s = make_store(backend, home=mtagent_home, dsn=store_dsn, tenant=tenant, max_bytes=max_bytes)
        made.append(s)
        return s

    yield factory
    for s in made:
        s.close()  # type: ignore[attr-defined]
