"""Context policies: named settings overlays the same model runs every task under.

A policy changes only how the context is managed — never the model, the tools' behaviour or the
task — so a difference in solve rate or cost is the policy's. The built-in names are the comparison
arms ``mtagent replay`` compares too (:data:`mtagent.replay.names.ARMS`, defined once there): ``mtagent``
(the defaults), ``threshold``, ``masking`` and ``lc-summarization``, each approximated with the live
engine's own knobs.

Any other name is a TOML file of settings sections (``[context]``, ``[recall]``, …) — the same
keys as ``config.toml`` (``docs/configuration.md``); its stem is the policy's name. Overlays are
validated before anything runs, so a typo is a clear error, not a silently default run.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtagent.config import Settings
from mtagent.errors import UsageError
from mtagent.replay.names import ARMS

BUILTIN_POLICIES: dict[str, dict[str, dict[str, Any]]] = {arm.policy: arm.overlay for arm in ARMS}
MAX_POLICY_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class Policy:
    """A name and the settings sections it overrides."""

    name: str
    overlay: dict[str, dict[str, Any]] = field(default_factory=dict)


def merge_sections(*layers: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Later layers win, key by key inside each section."""
    merged: dict[str, dict[str, Any]] = {}
    for layer in layers:
        for section, body in layer.items():
            merged.setdefault(section, {}).update(body)
    return merged


def _validate(name: str, overlay: Any, where: str) -> dict[str, dict[str, Any]]:
    if not isinstance(overlay, dict) or not all(isinstance(v, dict) for v in overlay.values()):
        raise UsageError(f"policy {name!r} ({where}) must be tables of settings, e.g. [context] compaction_trigger = "
                         "\"threshold\"")
    try:
        Settings.model_validate(overlay)
    except Exception as exc:  # noqa: BLE001 — pydantic's message names the bad key
        first = str(exc).splitlines()
        detail = "; ".join(line.strip() for line in first[1:3]) or str(exc)
        raise UsageError(f"policy {name!r} ({where}) has a bad setting: {detail[:300]}") from None
    return overlay


def load_policy(spec: str) -> Policy:
    """A built-in policy by name, or a TOML overlay file (its stem names it)."""
    if spec in BUILTIN_POLICIES:
        return Policy(spec, BUILTIN_POLICIES[spec])
    path = Path(spec).expanduser()
    if path.suffix != ".toml":
        raise UsageError(f"unknown policy {spec!r}; use one of {', '.join(BUILTIN_POLICIES)} or a .toml file of "
                         "settings")
    try:
        raw = path.read_bytes()[:MAX_POLICY_BYTES + 1]
    except OSError as exc:
        raise UsageError(f"cannot read policy file {path}: {exc.strerror or exc}") from None
    if len(raw) > MAX_POLICY_BYTES:
        raise UsageError(f"policy file {path} is larger than {MAX_POLICY_BYTES // 1024} KB; it holds settings only")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"policy file {path} is not valid TOML: {exc}") from None
    name = path.stem
    if name in BUILTIN_POLICIES:
        raise UsageError(f"policy file {path} has the name of the built-in policy {name!r}; rename the file")
    return Policy(name, _validate(name, data, str(path)))


def parse_settings(assignments: list[str]) -> dict[str, dict[str, Any]]:
    """``section.key=value`` items (values as TOML, else text) → settings sections, validated."""
    overlay: dict[str, dict[str, Any]] = {}
    for item in assignments:
        name, sep, raw = item.partition("=")
        section, dot, key = name.strip().partition(".")
        if not sep or not dot or not section or not key:
            raise UsageError(f"--setting {item!r} must look like section.key=value, e.g. context.token_limit=2048")
        try:
            value: Any = tomllib.loads(f"v = {raw.strip()}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw.strip()
        overlay.setdefault(section, {})[key] = value
    return _validate("--setting", overlay, "command line") if overlay else overlay


def load_policies(specs: list[str]) -> list[Policy]:
    """Each named policy once, in the order given (at least one; default: ``mtagent``)."""
    policies = [load_policy(s) for s in specs or ["mtagent"]]
    names = [p.name for p in policies]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate is not None:
        raise UsageError(f"policy {duplicate!r} is given twice; each policy runs every task once")
    return policies
