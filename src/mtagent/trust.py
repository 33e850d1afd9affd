"""Project trust: a repository's own ``.mtagent/config.toml`` is untrusted until the user says so.

The project config lives inside the repository being worked on, so whoever wrote the repository
wrote it. Until the user trusts that project (``mtagent trust``, or the REPL's first-run
question), the keys that relax security — :data:`SECURITY_KEYS`: approval rules, extra workspace
roots, every shell setting (``shell.env_passthrough`` too), the model and its endpoint, and every
key that widens what is read, indexed, loaded or run (``recall.index_workspace``, ``[mcp]``,
``[skills]``; :func:`register_security_keys` adds more) — are dropped from the project layer with
a one-line warning; everything else (window sizes, compaction tunables) still applies.
:data:`USER_ONLY_KEYS` (``memory.allow_external_includes``) are dropped from a project's config
even when it is trusted: they name files outside the project.

Decisions live in the user's home (``$MTAGENT_HOME/trust.json``), keyed by the project's resolved
path, never in the project. A decision is ``trusted`` or ``untrusted``; no entry means undecided
(treated as untrusted, and the REPL asks).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mtagent import paths
from mtagent.errors import ConfigError

# (section, key) pairs a project may not set until trusted; a key of "*" covers the whole section.
SECURITY_KEYS: frozenset[tuple[str, str]] = frozenset({
    ("agent", "approval"), ("agent", "workspace_extra_roots"), ("agent", "base_url"), ("agent", "model"),
    ("agent", "compact_model"), ("shell", "*"),
    ("storage", "*"),  # a repository must not send its sessions to a database of its choosing
    # widening keys: what is read, indexed, loaded or run beyond the built-in defaults
    ("recall", "index_workspace"),  # reads (and stores) every project file into the recall index
    ("recall", "embeddings"),  # sends indexed text to an embedding endpoint
    ("mcp", "*"),  # starts servers (commands) and talks to URLs of the repository's choosing
    ("skills", "*"),  # loads instructions and scripts from folders of the repository's choosing
    ("agent", "model_options"),  # request fields: another `model`, `n`, `messages`, headers — agent.model by the back door
    ("ui", "host"),  # the explain UI (transcripts, artifacts) served beyond localhost
    ("memory", "auto_extract"),  # facts written to memory after turns, with no save_memory call to approve
})
# Keys only the user's own layers (home config, environment, arguments) may set — a project's
# config cannot set them even once trusted, because they say what lies *outside* the project.
USER_ONLY_KEYS: frozenset[tuple[str, str]] = frozenset({("memory", "allow_external_includes")})
# Lists that add up over the config layers instead of replacing: redactions only ever grow, so an
# untrusted project may set them (more redaction is safe) but can never drop one the user configured.
ADDITIVE_KEYS: frozenset[tuple[str, str]] = frozenset({("security", "redact_values"), ("security", "redact_env")})
_MAX_STORE_BYTES = 4 * 1024 * 1024
_warned: set[str] = set()


def _key(project_root: str | os.PathLike[str]) -> str:
    return str(Path(project_root).expanduser().resolve())


def _load() -> dict[str, dict[str, Any]]:
    path = paths.trust_store_path()
    try:
        with path.open("rb") as fh:
            raw = fh.read(_MAX_STORE_BYTES + 1)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read the project trust file {path}: {exc.strerror}; fix or delete it") from exc
    try:
        data = json.loads(raw.decode("utf-8")) if len(raw) <= _MAX_STORE_BYTES else None
    except (UnicodeDecodeError, ValueError, RecursionError):
        data = None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise ConfigError(f"the project trust file {path} is damaged; delete it and trust projects again "
                          "with `mtagent trust`")
    return data


def _save(data: dict[str, dict[str, Any]]) -> None:
    path = paths.trust_store_path()
    paths.ensure_dir(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=".trust-", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)
    os.replace(tmp, path)


def decision(project_root: str | os.PathLike[str]) -> bool | None:
    """True (trusted), False (the user said no) or None (never asked)."""
    entry = _load().get(_key(project_root))
    return None if entry is None else bool(entry.get("trusted"))


def is_trusted(project_root: str | os.PathLike[str]) -> bool:
    return decision(project_root) is True


def set_trust(project_root: str | os.PathLike[str], trusted: bool) -> str:
    """Record the user's decision; returns the key (the resolved path)."""
    data = _load()
    key = _key(project_root)
    data[key] = {"trusted": trusted, "decided_at": time.time()}
    _save(data)
    return key


def forget(project_root: str | os.PathLike[str]) -> bool:
    data = _load()
    removed = data.pop(_key(project_root), None) is not None
    if removed:
        _save(data)
    return removed


def all_decisions() -> dict[str, dict[str, Any]]:
    return _load()


def register_security_keys(*keys: tuple[str, str]) -> None:
    """Add ``(section, key)`` pairs (``"*"`` for a whole section) an untrusted project may not set.

    For a new config section that widens what is read, loaded or run (MCP servers, skills, …):
    registering it here is all it takes for an untrusted project's config to be ignored for it.
    """
    global SECURITY_KEYS
    SECURITY_KEYS = SECURITY_KEYS | frozenset(keys)


def _listed(section: str, key: str, keys: frozenset[tuple[str, str]]) -> bool:
    return (section, key) in keys or (section, "*") in keys


def security_keys_in(layer: dict[str, Any], keys: frozenset[tuple[str, str]] | None = None) -> list[str]:
    """The security keys ``layer`` (one config file's tables) sets, as ``section.key``."""
    keys = SECURITY_KEYS if keys is None else keys
    found = []
    for section, body in layer.items():
        if not isinstance(body, dict):
            continue
        for key in body:
            if _listed(section, key, keys):
                found.append(f"{section}.{key}")
    return found


def _without(layer: dict[str, Any], dropped: list[str]) -> dict[str, Any]:
    kept = {}
    for section, body in layer.items():
        if isinstance(body, dict):
            body = {k: v for k, v in body.items() if f"{section}.{k}" not in dropped}
        kept[section] = body
    return kept


def filter_project_layer(layer: dict[str, Any], project_root: str | os.PathLike[str], source: str) -> dict[str, Any]:
    """``layer`` without its security keys unless the project is trusted, and never with a
    user-only key (one warning line per file and reason)."""
    user_only = security_keys_in(layer, USER_ONLY_KEYS)
    if user_only:
        layer = _without(layer, user_only)
        if f"user-only:{source}" not in _warned:
            _warned.add(f"user-only:{source}")
            sys.stderr.write(f"warning: ignoring {', '.join(user_only)} from {source}: only your own "
                             f"{paths.global_config_path()} may set it\n")
    dropped = security_keys_in(layer)
    if not dropped or is_trusted(project_root):
        return layer
    kept = _without(layer, dropped)
    if source not in _warned:
        _warned.add(source)
        sys.stderr.write(f"warning: ignoring {', '.join(dropped)} from {source}: this project is not trusted "
                         f"(run `mtagent trust {_key(project_root)}` if you trust it)\n")
    return kept
