"""Where mtagent keeps things on disk.

Layout (spec 000 M1, spec 002 memory)::

    $MTAGENT_HOME (default ~/.mtagent)/
      config.toml                       global settings
      CONTEXT.md                        Tier 1 context (+ "## Agent Memories")
      history/<project-hash>/
        <session-id>.jsonl              canonical transcript
        <session-id>/subagents/<child-id>.jsonl   a subagent's transcript
        artifacts/<session-id>/
          tool-results/<tool-call-id>.txt
          session-memory/summary.md
          checkpoints.sqlite            LangGraph checkpoints
      projects/<project-hash>/memory/   project long-term memory (MEMORY.md + topics)
      mirror/<tenant>-<hash>/           a PostgreSQL tenant's local home: the same layout, its own
                                        memory, recall index and artifact cache (session/local.py)
      cache/                            what mtagent can rebuild: decoded vocabularies, the
                                        start-up module list (:func:`write_cache`)

Nothing here touches the disk at import time; folders are created by :func:`ensure_dir`
when something is first written into them.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

HOME_ENV = "MTAGENT_HOME"
_SESSION_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def mtagent_home() -> Path:
    """The root of everything mtagent stores; ``MTAGENT_HOME`` overrides it (tests use it)."""
    override = os.environ.get(HOME_ENV)
    if override:
        return Path(override).expanduser()
    return Path.home() / ".mtagent"


def project_hash(project_root: str | os.PathLike[str]) -> str:
    """A stable, filesystem-safe key for a project: its folder name plus a hash of its path."""
    resolved = Path(project_root).expanduser().resolve()
    digest = hashlib.sha256(str(resolved).encode("utf-8")).hexdigest()[:12]
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", resolved.name).strip("-")[:40] or "root"
    return f"{name}-{digest}"


def validate_session_id(session_id: str) -> str:
    """Session ids become file names, so only a safe alphabet is allowed."""
    if not _SESSION_ID_RE.match(session_id) or ".." in session_id:
        from mtagent.errors import UsageError

        raise UsageError(
            f"invalid session id {session_id!r}: use letters, digits, '.', '_' or '-' "
            "(see `mtagent sessions list`)"
        )
    return session_id


def global_config_path() -> Path:
    return mtagent_home() / "config.toml"


def trust_store_path() -> Path:
    """The user's project trust decisions (``mtagent trust``); in the home, never in a project."""
    return mtagent_home() / "trust.json"


def global_context_path() -> Path:
    return mtagent_home() / "CONTEXT.md"


# Tier 2 context files of a project (read by ``context/static/rules.py``; named here so a front end
# can read them ahead without importing the engine).
PROJECT_CONTEXT_FILES = ("CONTEXT.md", ".mtagent/CONTEXT.md")
LOCAL_CONTEXT_FILE = "CONTEXT.local.md"
RULES_DIR = ".mtagent/rules"


def project_config_path(project_root: str | os.PathLike[str]) -> Path:
    return Path(project_root) / ".mtagent" / "config.toml"


def history_dir(project_root: str | os.PathLike[str]) -> Path:
    return mtagent_home() / "history" / project_hash(project_root)


def session_transcript_path(project_root: str | os.PathLike[str], session_id: str) -> Path:
    return history_dir(project_root) / f"{validate_session_id(session_id)}.jsonl"


def session_artifact_dir(project_root: str | os.PathLike[str], session_id: str) -> Path:
    return history_dir(project_root) / "artifacts" / validate_session_id(session_id)


def subagent_transcript_path(project_root: str | os.PathLike[str], session_id: str, child_id: str) -> Path:
    """``<history>/<session-id>/subagents/<child-id>.jsonl``: a child beside its parent (Claude Code's layout)."""
    return history_dir(project_root) / validate_session_id(session_id) / "subagents" / f"{validate_session_id(child_id)}.jsonl"


def project_state_dir(project_root: str | os.PathLike[str], home: Path | None = None) -> Path:
    """``<home>/projects/<project-hash>``: a project's long-term memory and recall index.

    ``home`` is the tenant's local home (:func:`mtagent.session.local.local_home`); the default is
    ``$MTAGENT_HOME``, the files backend's."""
    return _state_dir_of(project_hash(project_root), home)


def _state_dir_of(project: str, home: Path | None) -> Path:
    return (home or mtagent_home()) / "projects" / project


def memory_dir_of(project: str, home: Path | None = None) -> Path:
    """``<home>/projects/<project-key>/memory``: a project's long-term memory folder by its key
    (:func:`project_hash`), as the stores and the UI name a project; the caller has validated the key."""
    return _state_dir_of(project, home) / "memory"


def project_memory_dir(project_root: str | os.PathLike[str], home: Path | None = None) -> Path:
    return memory_dir_of(project_hash(project_root), home)


def mcp_server_workdir(server_key: str) -> Path:
    """``<home>/mcp/<server-key>``: where a user-configured MCP server starts when its ``cwd`` is unset.

    Never the project: ``python -m pkg`` puts its working folder first on ``sys.path`` and ``npx``
    resolves ``node_modules`` from it, so a cloned repository's files would run as the user's server."""
    return mtagent_home() / "mcp" / server_key


def ensure_dir(path: Path) -> Path:
    """Create ``path`` (and parents) when first needed; return it."""
    path.mkdir(parents=True, exist_ok=True)
    return path


def cache_path(name: str) -> Path:
    return mtagent_home() / "cache" / name


def write_cache(path: Path, data: bytes) -> None:
    """Replace a cache file whole (a scratch file, then a rename: a reader never sees half of it).
    A read-only home is not an error: what the cache holds is rebuilt next time."""
    try:
        ensure_dir(path.parent)
        scratch = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        scratch.write_bytes(data)
        os.replace(scratch, path)
    except OSError:
        pass
