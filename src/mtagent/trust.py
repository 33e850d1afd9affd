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
(treated as untrusted, and the REPL asks). A ``trusted`` decision binds to contents: it stores the
fingerprint of what it covered (:mod:`mtagent.trust_scope`), and a project whose servers, security
keys, skills or profiles were added or changed since is *changed* — treated as untrusted until the
user confirms again (the REPL asks showing the change; ``run``, ``mcp list``, ``tools list`` and
``eval`` refuse with one line, :func:`refuse_if_changed`). A decision recorded before fingerprints
existed counts as changed (nothing says what it covered).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mtagent import paths, secret_rules, trust_scope
from mtagent.config_file import read_toml
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
    # the sandbox (issue 37): turning it off, opening hosts, sandboxing MCP servers or not is the user's call
    ("sandbox", "mode"), ("sandbox", "allow_hosts"), ("sandbox", "mcp_servers"),
})
# Keys only the user's own layers (home config, environment, arguments) may set — a project's
# config cannot set them even once trusted, because they say what lies *outside* the project.
USER_ONLY_KEYS: frozenset[tuple[str, str]] = frozenset({("memory", "allow_external_includes"),
                                                     ("sandbox", "allow_write")})  # folders outside the project
# Lists that add up over the config layers instead of replacing: redactions only ever grow, so a
# project can never drop one the user configured; an untrusted one adds only what looks like a secret
# and never a variable commands need (:func:`mtagent.secret_rules.untrusted_redactions`).
ADDITIVE_KEYS: frozenset[tuple[str, str]] = frozenset({("security", "redact_values"), ("security", "redact_env"),
                                                    ("sandbox", "hide_paths")})  # hidden paths only grow
# Size and budget keys an untrusted project may set only to read, keep or send *less* than the layers
# below it (defaults, the user's config): "max" — a larger number widens; "subset" — a list whose new
# names widen (tools whose results are never cut); "superset" — a list whose dropped names widen
# (tools whose results are cleared, or left out of compact mode); "max_each" — a table of numbers,
# each entry no larger than below. A trusted project sets them freely (they are in its fingerprint).
NARROW_ONLY: dict[tuple[str, str], str] = {
    **{("tool_results", k): "max" for k in ("grep_max_chars", "shell_max_chars", "default_max_chars",
                                            "aggregate_max_chars", "preview_chars", "artifact_max_bytes")},
    ("tool_results", "per_tool_max_chars"): "max_each", ("tool_results", "self_limiting_tools"): "subset",
    **{("read_file", k): "max" for k in ("max_size_bytes", "max_tokens", "default_limit_lines", "max_line_chars",
                                         "count_lines_max_bytes", "edit_max_bytes")},
    **{("memory", k): "max" for k in ("index_max_lines", "rules_max_chars", "include_max_depth",
                                      "context_file_max_bytes", "extract_max_facts", "extract_input_max_tokens")},
    **{("recall", k): "max" for k in ("workspace_max_file_bytes", "item_max_chars", "default_k", "snippet_chars",
                                      "max_query_terms", "retrieved_max_fraction", "retrieve_max_hits")},
    **{("context", k): "max" for k in ("token_limit", "reattach_max_files", "reattach_max_tokens")},
    **{("session_memory", k): "max" for k in ("section_max_tokens", "total_max_tokens", "update_input_max_tokens")},
    **{("microcompact", k): "max" for k in ("keep_recent", "gap_threshold_minutes", "size_trigger_fraction",
                                            "size_target_fraction")},
    ("microcompact", "compactable_tools"): "superset",
    **{("tools", k): "max" for k in ("listing_max_tokens", "search_default_k", "search_max_k", "defer_share",
                                     "defer_min_tools")},
    ("tools", "core"): "subset",
    **{("agent", k): "max" for k in ("max_steps", "max_output_tokens", "tool_schema_max_share")},
    ("agent", "compact_drop_tools"): "superset", ("agent", "model_windows"): "max_each",
    **{("subagents", k): "max" for k in ("max_depth", "max_parallel", "max_per_turn", "max_steps",
                                         "report_max_tokens", "files_max_tokens", "task_state_max_tokens",
                                         "evidence_max_refs")},
}
_MAX_STORE_BYTES = 4 * 1024 * 1024
_warned: set[str] = set()


def _key(project_root: str | os.PathLike[str]) -> str:
    return str(Path(project_root).expanduser().resolve())


def all_decisions() -> dict[str, dict[str, Any]]:
    """Every trust decision on this machine, by project key (what ``mtagent trust --list`` shows)."""
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
    """True (trusted), False (the user said no) or None (never asked) — what the user decided, whether
    or not the project changed since (:func:`changes_since_trusted`)."""
    entry = all_decisions().get(_key(project_root))
    return None if entry is None else bool(entry.get("trusted"))


LEGACY = ("trusted by an earlier mtagent that did not record what the trust covered; nothing of it "
          "applies until you confirm it again")


def changes_since_trusted(project_root: str | os.PathLike[str], layer: dict[str, Any] | None = None) -> list[str] | None:
    """None unless the project is trusted; then one line per item added or changed since the user
    trusted it ([] when it is as trusted; :data:`LEGACY` for a decision without a fingerprint)."""
    entry = all_decisions().get(_key(project_root))
    if entry is None or not entry.get("trusted"):
        return None
    stored = entry.get("covers")
    if not isinstance(stored, dict):
        return [LEGACY]
    return [c.line() for c in trust_scope.changes(stored, covered(project_root, layer))]


def covers_server(project_root: str | os.PathLike[str], source: str, name: str, raw: Any) -> bool:
    """Whether the trusted decision for ``project_root`` covered this very server entry (``raw``, as
    the caller read it from ``source``): what starts is what was trusted, even if the file changed
    between the trust check and the read."""
    entry = all_decisions().get(_key(project_root))
    stored = entry.get("covers") if entry and entry.get("trusted") else None
    item = stored.get(f"mcp:{source}:{name}") if isinstance(stored, dict) else None
    return isinstance(item, dict) and item.get("digest") == trust_scope.server_digest(raw)


# Keys an untrusted project's value is cut down for (secret_rules.untrusted_redactions) and a trusted
# one's applies whole: a redaction can hide code lines from the agent, so a trusted value is covered too.
_NARROWED_WHEN_UNTRUSTED = frozenset({("security", "redact_values"), ("security", "redact_env")})


def keys_needing_trust(layer: dict[str, Any]) -> list[str]:
    """The ``section.key`` names of a project config ``layer`` a trust decision covers: its security
    keys, the size and budget keys an untrusted project may only narrow (:data:`NARROW_ONLY`) and the
    redactions it may only narrow."""
    found = security_keys_in(layer)
    more = security_keys_in(layer, frozenset(NARROW_ONLY) | _NARROWED_WHEN_UNTRUSTED)
    return found + [k for k in more if k not in found]


def covered(project_root: str | os.PathLike[str], layer: dict[str, Any] | None = None) -> dict[str, trust_scope.CoveredItem]:
    """What trusting ``project_root`` lets apply or run now (:func:`mtagent.trust_scope.covered`);
    ``layer``: its config as the caller read it (read here when not given)."""
    if layer is None:
        try:
            layer = read_toml(paths.project_config_path(project_root))
        except ConfigError as exc:
            items = trust_scope.covered(project_root, {}, [])
            item = trust_scope.unreadable_config(str(exc))
            return {**items, item.id: item}
    return trust_scope.covered(project_root, layer, keys_needing_trust(layer))


def is_trusted(project_root: str | os.PathLike[str], layer: dict[str, Any] | None = None) -> bool:
    """Trusted, and nothing it covers was added or changed since (``layer``: the project's config as
    the caller read it, so what is checked is what applies)."""
    return changes_since_trusted(project_root, layer) == []


def changed_message(project_root: str | os.PathLike[str], changes: list[str]) -> str:
    """One line: what changed since the user trusted the project, and the way on."""
    where = trust_scope.visible(_key(project_root))
    return (f"{where} changed since you trusted it: {'; '.join(changes)}; nothing of it was started "
            f"or applied — review it with `mtagent trust {where}`")


def refuse_if_changed(project_root: str | os.PathLike[str]) -> None:
    """For the commands no one answers a question in (``run``, ``mcp list``, ``tools list``, ``eval``):
    a trusted project that changed since is a :class:`ConfigError` naming the change."""
    changes = changes_since_trusted(project_root)
    if changes:
        raise ConfigError(changed_message(project_root, changes))


def set_trust(project_root: str | os.PathLike[str], trusted: bool,
              covers: dict[str, trust_scope.CoveredItem] | None = None) -> str:
    """Record the user's decision; returns the key (the resolved path). A yes stores the fingerprint of
    ``covers`` — what the user was shown — (of the project as it is now when not given)."""
    data = all_decisions()
    key = _key(project_root)
    entry: dict[str, Any] = {"trusted": trusted, "decided_at": time.time()}
    if trusted:
        entry["covers"] = trust_scope.record(covered(project_root) if covers is None else covers)
    data[key] = entry
    _save(data)
    return key


def set_file_trust(path: str | os.PathLike[str], digest: str | None) -> str:
    """Trust the file at ``path`` (a task file) while its contents hash to ``digest``; None revokes."""
    data = all_decisions()
    key = _key(path)
    if digest is None:
        data.pop(key, None)
    else:
        data[key] = {"trusted": True, "decided_at": time.time(), "kind": "file", "digest": digest}
    _save(data)
    return key


def file_trusted(path: str | os.PathLike[str], digest: str) -> bool:
    """Whether the user trusted the file at ``path`` as it is now (its contents hash to ``digest``)."""
    entry = all_decisions().get(_key(path))
    return bool(entry and entry.get("kind") == "file" and entry.get("trusted") and entry.get("digest") == digest)


def forget(project_root: str | os.PathLike[str]) -> bool:
    data = all_decisions()
    removed = data.pop(_key(project_root), None) is not None
    if removed:
        _save(data)
    return removed


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


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _as_number(value: Any) -> Any:
    """``value`` as the number the settings' validation would make of it: ``"50000000"`` is coerced to
    an int there, so it is compared as one here (else it would slip past as "not a number")."""
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return value
    return value


def _widens(section: str, key: str, value: Any, below: Callable[[str, str], Any]) -> bool:
    """Whether the project's ``value`` for a :data:`NARROW_ONLY` key reads, keeps or sends more than
    the layers below it. A value of the wrong type is left to the settings' own validation."""
    rule, lower = NARROW_ONLY[(section, key)], _as_number(below(section, key))
    if rule == "max":
        value = _as_number(value)
        if not _number(value):
            return False
        return not _number(lower) or value > lower
    if rule in ("subset", "superset"):
        if not isinstance(value, list):
            return False
        lower = lower if isinstance(lower, list) else []
        return bool(set(map(str, value)) - set(lower)) if rule == "subset" else bool(set(lower) - set(map(str, value)))
    if not isinstance(value, dict):  # "max_each"
        return False
    lower = lower if isinstance(lower, dict) else {}
    floor = (min(below("tool_results", k) for k in ("grep_max_chars", "shell_max_chars", "default_max_chars"))
             if (section, key) == ("tool_results", "per_tool_max_chars") else None)
    for name, number in value.items():
        number, limit = _as_number(number), _as_number(lower.get(name, floor))
        if _number(number) and (not _number(limit) or number > limit):
            return True
    return False


def widening_keys_in(layer: dict[str, Any], below: Callable[[str, str], Any]) -> list[str]:
    """The :data:`NARROW_ONLY` keys ``layer`` sets above what ``below(section, key)`` (the merged
    defaults and user config) allows, as ``section.key``."""
    found = []
    for name in security_keys_in(layer, frozenset(NARROW_ONLY)):
        section, key = name.split(".", 1)
        if _widens(section, key, layer[section][key], below):
            found.append(name)
    return found


def filter_project_layer(layer: dict[str, Any], project_root: str | os.PathLike[str], source: str,
                         below: Callable[[str, str], Any] | None = None) -> dict[str, Any]:
    """``layer`` without its security keys, and without a size or budget key that would widen what
    ``below`` (the layers under the project's) allows, unless the project is trusted as it is now;
    never with a user-only key (one warning line per file and reason)."""
    user_only = security_keys_in(layer, USER_ONLY_KEYS)
    if user_only:
        layer = _without(layer, user_only)
        if f"user-only:{source}" not in _warned:
            _warned.add(f"user-only:{source}")
            sys.stderr.write(f"warning: ignoring {', '.join(user_only)} from {source}: only your own "
                             f"{paths.global_config_path()} may set it\n")
    changes = changes_since_trusted(project_root, layer)
    if changes == []:
        return layer
    narrowed: list[str] = []
    if isinstance(layer.get("security"), dict):  # redactions may not hide code or strip the commands' environment
        security, narrowed = secret_rules.untrusted_redactions(layer["security"])
        layer = {**layer, "security": security}
    dropped = security_keys_in(layer) + (widening_keys_in(layer, below) if below is not None else [])
    if source not in _warned and (dropped or changes or narrowed):
        _warned.add(source)
        why = ("it changed since you trusted it (" + "; ".join(changes) + ")" if changes
               else "this project is not trusted")
        what = (f"ignoring {', '.join(dropped + narrowed)} from {source}" if dropped or narrowed
                else f"not using what {source} and the project bring")
        widened = " (an untrusted project may only lower sizes and budgets)" if set(dropped) - set(security_keys_in(layer)) else ""
        sys.stderr.write(f"warning: {what}{widened}: {why} (run `mtagent trust {_key(project_root)}` if you "
                         "trust it)\n")
    return _without(layer, dropped)
