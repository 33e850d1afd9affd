"""A throw-away PostgreSQL server for tests and benchmarks: ``initdb`` + ``pg_ctl`` in a temp dir.

The server binaries come from ``PATH`` or Debian's ``/usr/lib/postgresql/<version>/bin``. They
refuse to run as root, so under root the data folder is handed to the ``postgres`` system user
(or ``nobody``) and the server runs as that user. It listens on 127.0.0.1 only, on a free port,
with trust authentication for one superuser, and is stopped (and its folder removed) on exit.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SUPERUSER = "mtagent_admin"
_RUN_AS = ("postgres", "nobody")


@dataclass(frozen=True, slots=True)
class PgBinaries:
    initdb: str
    pg_ctl: str


def find_binaries() -> PgBinaries | None:
    """``initdb`` and ``pg_ctl`` from PATH, else the newest /usr/lib/postgresql/*/bin; None if absent."""
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb and pg_ctl:
        return PgBinaries(initdb, pg_ctl)

    def version(path: str) -> tuple[int, ...]:
        part = Path(path).parent.parent.name
        return tuple(int(x) for x in part.split(".") if x.isdigit()) or (0,)

    for bindir in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: version(p + "/x"), reverse=True):
        if os.access(f"{bindir}/initdb", os.X_OK) and os.access(f"{bindir}/pg_ctl", os.X_OK):
            return PgBinaries(f"{bindir}/initdb", f"{bindir}/pg_ctl")
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run_as() -> pwd.struct_passwd | None:
    """The unprivileged user the server runs as when we are root (None: run as ourselves)."""
    if os.geteuid() != 0:
        return None
    for name in _RUN_AS:
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise RuntimeError("running as root and neither a 'postgres' nor a 'nobody' user exists to run PostgreSQL")


def _run(cmd: list[str], user: pwd.struct_passwd | None, timeout: float) -> None:
    kwargs: dict[str, object] = {}
    if user is not None:
        kwargs = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": [],
                  "env": {**os.environ, "HOME": "/tmp", "USER": user.pw_name}}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False,
                          cwd="/tmp", **kwargs)  # type: ignore[call-overload]
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:2])} failed ({done.returncode}): {(done.stderr or done.stdout)[-2000:]}")


@contextmanager
def temporary_server(*, fsync: bool = False, timeout: float = 60, max_connections: int = 100) -> Iterator[str]:
    """Start a server, yield its superuser DSN, stop it. ``fsync=False`` is for speed in tests;
    ``max_connections``: a fleet test's many processes hold two or three connections each."""
    binaries = find_binaries()
    if binaries is None:
        raise FileNotFoundError("PostgreSQL server binaries (initdb, pg_ctl) not found")
    user = _run_as()
    root = Path(tempfile.mkdtemp(prefix="mtagent-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    if user is not None:
        for path in (root, sock):
            os.chown(path, user.pw_uid, user.pw_gid)
    port = free_port()
    started = False
    try:
        _run([binaries.initdb, "-D", str(data), "-U", SUPERUSER, "--auth=trust", "-E", "UTF8",
              "--no-sync", "--no-instructions"], user, timeout)
        options = f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c max_connections={int(max_connections)}"
        options += "" if fsync else " -F -c synchronous_commit=off -c full_page_writes=off"
        _run([binaries.pg_ctl, "-D", str(data), "-o", options, "-l", str(root / "server.log"), "-w",
              "-t", str(int(timeout)), "start"], user, timeout + 10)
        started = True
        yield f"postgresql://{SUPERUSER}@127.0.0.1:{port}/postgres"
    finally:
        if started:
            try:
                _run([binaries.pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"], user, timeout)
            except (RuntimeError, subprocess.TimeoutExpired):
                pass
        shutil.rmtree(root, ignore_errors=True)


def create_database(admin_dsn: str, name: str) -> str:
    """A fresh database on the server of ``admin_dsn``; returns its DSN."""
    import psycopg

    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return admin_dsn.rsplit("/", 1)[0] + f"/{name}"
