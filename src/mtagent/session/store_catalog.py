"""Reading sessions that live in a shared store with the readers built for files.

``mtagent sessions show|export``, the explain UI and the REPL's pickers read transcripts as files
(byte offsets, artifacts beside them). In PostgreSQL mode they read a *mirror*: the tenant's
sessions copied, as their stored bytes, into ``$MTAGENT_HOME/mirror/<tenant>-<key>/`` in the
files backend's layout. The mirror is a read-only cache, refreshed incrementally before each read
(only records past the ones it holds are fetched; a mirror that disagrees with the store is
rebuilt), keyed by the server and tenant so two databases or tenants never share one — it is the
tenant's local home (:mod:`mtagent.session.local`). Nothing writes to the store from here.
``sessions list`` needs no mirror: one query summarises a project. Callers reach all of this
through the store's methods (``transcript_file``, ``history_folder``, ``tenant_folder``,
``session_infos``), never directly.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mtagent import paths
from mtagent.errors import SessionNotFound
from mtagent.session import schema
from mtagent.session.catalog import SessionInfo
from mtagent.session.files_store import FilesStore


def session_infos(store: Any, project: str) -> list[SessionInfo]:
    """``mtagent sessions list`` figures for a project in ``store``, oldest first."""
    from mtagent.session.postgres.catalog import session_rows

    infos = []
    for row in session_rows(store, project):
        first = row.first if row.first.get("type") == schema.SESSION_START else {}
        infos.append(SessionInfo(
            session_id=row.session_id,
            path=Path("postgres") / store.tenant / project / row.session_id,
            started=schema.parse_timestamp(row.first.get("timestamp")),
            last_activity=schema.parse_timestamp(row.last.get("timestamp")),
            messages=row.messages, compactions=row.compactions, size_bytes=row.size_bytes,
            model=first.get("model")))
    return infos


def session_cache_dir(store: Any, project: str, session_id: str) -> Path:
    """The tenant's local artifact folder of one session (a cache of the store's artifacts), in the
    mirror — the tenant's local home — so two tenants on one machine never share a cached artifact or
    session notes, even for the same session id (the middleware derives ids from thread ids)."""
    home = Path(store.local_home)
    _private(home)
    return home / "history" / project / "artifacts" / paths.validate_session_id(session_id)


def _complete_lines(path: Path) -> list[bytes]:
    """The mirror's whole lines; a torn tail (an interrupted refresh) is cut off the file."""
    if not path.is_file():
        return []
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end != len(data):
        with open(path, "r+b") as fh:
            fh.truncate(end)
    return data[:end].split(b"\n")[:-1]


def mirror_session(store: Any, project: str, session_id: str, *, home: Path | None = None,
                   beside: bool = True) -> Path:
    """Bring the mirror of one session up to date; return its transcript file.

    ``beside``: also its artifacts, notes and the project memory (an export needs none of them)."""
    from mtagent.session.postgres.catalog import read_lines

    paths.validate_session_id(session_id)
    if session_id not in store.sessions(project):
        raise SessionNotFound(f"no session {session_id} in project {project} for tenant {store.tenant}; "
                              "see `mtagent sessions list`")
    local = FilesStore(tenant=store.tenant, max_artifact_bytes=store.max_artifact_bytes,
                       home=home or Path(store.local_home))
    path = local.transcript_path(project, session_id)
    cached = _complete_lines(path)
    rows = read_lines(store, project, session_id, start=max(len(cached) - 1, 0))
    if cached and (not rows or rows[0] != (len(cached) - 1, cached[-1])):
        cached, rows = [], read_lines(store, project, session_id)  # disagrees with the store: rebuild
    _private(local.home)
    paths.ensure_dir(path.parent)
    mode = "ab" if cached else "wb"
    with open(path, mode) as fh:
        fh.writelines(line + b"\n" for seq, line in rows if seq >= len(cached))
    if beside:
        _mirror_beside(store, local, project, session_id)
    return path


def copy_session_files(src: Any, dst: Any, project: str, session_id: str) -> tuple[int, bool]:
    """The artifacts ``dst`` lacks (each copied once: they never change) and the session notes when they
    differ; (artifacts copied, notes copied)."""
    have = set(dst.list_artifacts(project, session_id))
    missing = [relative for relative in src.list_artifacts(project, session_id) if relative not in have]
    for relative in missing:
        dst.write_artifact(project, session_id, relative, src.read_artifact(project, session_id, relative))
    notes = src.read_session_memory(project, session_id)
    differ = notes is not None and dst.read_session_memory(project, session_id) != notes
    if differ:
        dst.write_session_memory(project, session_id, notes)
    return len(missing), differ


def _mirror_beside(store: Any, local: FilesStore, project: str, session_id: str) -> None:
    """Artifacts, the session notes (:func:`copy_session_files`) and the project memory."""
    copy_session_files(store, local, project, session_id)
    for name in store.list_memory(project):
        text = store.read_memory(project, name)
        if text is not None and local.read_memory(project, name) != text:
            local.write_memory(project, name, text)


def mirror_project(store: Any, project: str) -> Path:
    """Every session transcript of one project mirrored (no artifacts); the folder holding them."""
    home = Path(store.local_home)
    for session_id in store.sessions(project):
        mirror_session(store, project, session_id, home=home, beside=False)
    _private(home)
    return home / "history" / project


def mirror_tenant(store: Any) -> Path:
    """Mirror every session of the tenant (for the explain UI); return the mirror's home."""
    home = Path(store.local_home)
    for project in store.projects():
        for session_id in store.sessions(project):
            mirror_session(store, project, session_id, home=home)
    _private(home)
    return home


def _private(home: Path) -> None:
    """The mirror holds the tenant's transcripts: only this user may read it."""
    for folder in (home.parent, home):
        paths.ensure_dir(folder)
        os.chmod(folder, 0o700)
