"""Settings: every number of the spec, once, with the spec's value as its default.

Sources, later ones win::

    defaults ← ~/.mtagent/config.toml ← <project>/.mtagent/config.toml
             ← environment (MTAGENT_<SECTION>__<KEY>) ← explicit arguments

An unknown key or a wrong type is a :class:`~mtagent.errors.ConfigError` naming the key and
where it came from. ``mtagent config show`` prints the merged result; docs/configuration.md's reference
table is checked against these models by a test.

Why not pydantic-settings: its sources cannot say *which* file or variable held a bad value
("invalid value for 'context.token_limit' in ~/.mtagent/config.toml"), reject unknown keys per
file with the valid ones listed, or read TOML literals from ``MTAGENT_*`` variables; the merge
below is ~80 lines and keeps those messages. The models themselves are plain pydantic.
"""

from __future__ import annotations

import os
import tomllib
from typing import Any

from pydantic import Field, ValidationError, model_validator

from mtagent import paths, trust
from mtagent.config_file import MAX_CONFIG_BYTES, read_toml as _read_toml  # noqa: F401  (re-exported)
from mtagent.config_ranges import SettingRangeError, check_ranges
from mtagent.errors import ConfigError
from mtagent.config_sections import (  # noqa: F401  (re-exported: the public names of mtagent.config)
    _Section, ContextSettings, ToolResultSettings, ReadFileSettings, MicrocompactSettings, SessionMemorySettings,
    MemorySettings, RecallSettings, ToolsSettings, SkillsSettings, TranscriptSettings, StorageSettings, ShellSettings,
    UiSettings, AgentSettings, SubagentSettings, SecuritySettings, SandboxSettings, McpSettings, McpServerSettings,
    effective_context_limit, auto_compact_threshold, DEFAULT_PRICES, MAX_OUTPUT_CAP_TOKENS, MAX_OUTPUT_FLOOR_TOKENS,
    MAX_OUTPUT_WINDOW_SHARE,
)

ENV_PREFIX = "MTAGENT_"
_NON_SETTING_ENV = {"MTAGENT_HOME"}


class Settings(_Section):
    """The whole configuration. Sections mirror the TOML tables."""

    context: ContextSettings = Field(default_factory=ContextSettings)
    tool_results: ToolResultSettings = Field(default_factory=ToolResultSettings)
    read_file: ReadFileSettings = Field(default_factory=ReadFileSettings)
    microcompact: MicrocompactSettings = Field(default_factory=MicrocompactSettings)
    session_memory: SessionMemorySettings = Field(default_factory=SessionMemorySettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    recall: RecallSettings = Field(default_factory=RecallSettings)
    tools: ToolsSettings = Field(default_factory=ToolsSettings)
    skills: SkillsSettings = Field(default_factory=SkillsSettings)
    transcript: TranscriptSettings = Field(default_factory=TranscriptSettings)
    storage: StorageSettings = Field(default_factory=StorageSettings)
    shell: ShellSettings = Field(default_factory=ShellSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    ui: UiSettings = Field(default_factory=UiSettings)
    subagents: SubagentSettings = Field(default_factory=SubagentSettings)
    security: SecuritySettings = Field(default_factory=SecuritySettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)

    @model_validator(mode="after")
    def _ranges_and_relations(self) -> Settings:
        check_ranges(self)  # finite, sane numbers; settings that bound each other agree
        return self

    def with_token_limit(self, token_limit: int) -> Settings:
        """These settings in a window of ``token_limit`` tokens (themselves when it already is)."""
        if token_limit == self.context.token_limit:
            return self
        return self.model_copy(update={"context": self.context.model_copy(update={"token_limit": token_limit})})

    def auto_compact_threshold_tokens(self, token_limit: int | None = None, fixed_tokens: int = 0) -> int:
        """The token count at which auto compaction fires — the one definition: the engine's policy
        fires here, and ``/context``, the REPL banner, ``run``, demo, replay and tune show it.

        ``fixed_tokens`` is the view's fixed part (system prompt + tool schemas). The default
        threshold is never below it plus ``min_threshold_fraction`` of the room left beside it: in a
        2,048-token window the spec's floor (921) sat below the system prompt and compact tool schemas
        alone (1,069), so every call tried a compaction that could not shrink anything. A threshold
        the user set is kept exactly."""
        ctx = self.context
        window = token_limit or ctx.token_limit
        override = ctx.auto_compact_threshold
        if override is not None:
            return int(window * override) if isinstance(override, float) else override
        threshold = auto_compact_threshold(
            window, ctx.summary_reserved_tokens, ctx.autocompact_buffer_tokens, ctx.min_threshold_fraction
        )
        if not 0 < fixed_tokens < window:
            return threshold
        return max(threshold, fixed_tokens + int((window - fixed_tokens) * ctx.min_threshold_fraction))


SECTIONS: dict[str, type[_Section]] = {
    name: field.annotation for name, field in Settings.model_fields.items()  # type: ignore[misc]
}


_FOREIGN_MCP_TABLES = {"mcp_servers": "Codex", "mcpServers": "Claude Code", "mcp-servers": "another agent"}


def _check_keys(data: dict[str, Any], source: str) -> None:
    for section, body in data.items():
        if section not in SECTIONS:
            if section in _FOREIGN_MCP_TABLES:
                raise ConfigError(f"[{section}] in {source} is {_FOREIGN_MCP_TABLES[section]}'s spelling; mtagent "
                                  "spells it [mcp.servers.NAME] (same command, args, env, url keys), or run "
                                  "`mtagent mcp add NAME -- COMMAND ARGS…`")
            raise ConfigError(f"unknown config section [{section}] in {source}; valid sections: {', '.join(SECTIONS)}")
        if not isinstance(body, dict):
            raise ConfigError(f"[{section}] in {source} must be a table of settings")
        known = SECTIONS[section].model_fields
        for key in body:
            if key not in known:
                raise ConfigError(
                    f"unknown config key '{section}.{key}' in {source}; "
                    f"valid keys of [{section}]: {', '.join(known)}"
                )


def _env_layer(environ: dict[str, str]) -> dict[str, Any]:
    """``MTAGENT_CONTEXT__TOKEN_LIMIT=65536`` → ``{"context": {"token_limit": "65536"}}``.

    Values stay strings (or parsed TOML literals) and are validated by pydantic like any layer.
    """
    layer: dict[str, dict[str, Any]] = {}
    for name, raw in environ.items():
        if not name.startswith(ENV_PREFIX) or name in _NON_SETTING_ENV:
            continue
        rest = name[len(ENV_PREFIX):].lower()
        if "__" not in rest:
            raise ConfigError(
                f"environment variable {name} is not a setting; use MTAGENT_<SECTION>__<KEY>, "
                "e.g. MTAGENT_CONTEXT__TOKEN_LIMIT"
            )
        section, key = rest.split("__", 1)
        layer.setdefault(section, {})[key] = _parse_env_value(raw)
    return layer


def _parse_env_value(raw: str) -> Any:
    """Parse a TOML literal (numbers, booleans, arrays, inline tables); fall back to the string."""
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def _merge(base: dict[str, Any], layer: dict[str, Any]) -> None:
    for section, body in layer.items():
        target = base.setdefault(section, {})
        for key, value in body.items():
            earlier = target.get(key)
            if (section, key) in trust.ADDITIVE_KEYS and isinstance(value, list) and isinstance(earlier, list):
                value = earlier + [v for v in value if v not in earlier]  # a layer adds, never removes
            elif (section, key) == ("mcp", "servers") and isinstance(value, dict) and isinstance(earlier, dict):
                value = {**earlier, **value}  # servers by name: a later layer adds or replaces one, keeps the rest
            target[key] = value


def _validate(data: dict[str, Any], sources: dict[tuple[str, str], str]) -> Settings:
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        named = (err.get("ctx") or {}).get("error")  # a range check names its key (section.key) itself
        ranged = isinstance(named, SettingRangeError)
        loc = named.key.split(".") if ranged else [str(part) for part in err["loc"]]
        where = sources.get(tuple(loc[:2]), "defaults")  # type: ignore[arg-type]
        why = named if ranged else err["msg"]
        raise ConfigError(f"invalid value for '{'.'.join(loc[:2])}' in {where}: {why}") from exc


def _below(user_layer: dict[str, Any]) -> Any:
    """``(section, key) →`` the value under a project's config: the user's config, else the default
    (what an untrusted project's size and budget keys may only lower, :data:`mtagent.trust.NARROW_ONLY`)."""
    def lookup(section: str, key: str) -> Any:
        body = user_layer.get(section)
        if isinstance(body, dict) and key in body:
            return body[key]
        field = SECTIONS[section].model_fields[key]
        return field.get_default(call_default_factory=True)
    return lookup


def load_settings(
    project_root: str | os.PathLike[str] | None = None,
    overrides: dict[str, dict[str, Any]] | None = None,
    environ: dict[str, str] | None = None,
) -> Settings:
    """Merge every source into one validated :class:`Settings`."""
    layers: list[tuple[str, dict[str, Any]]] = []
    global_path = paths.global_config_path()
    layers.append((str(global_path), _read_toml(global_path)))
    if project_root is not None:
        project_path = paths.project_config_path(project_root)
        project_layer = trust.filter_project_layer(_read_toml(project_path), project_root, str(project_path),
                                                   below=_below(layers[0][1]))
        layers.append((str(project_path), project_layer))
    layers.append(("the environment", _env_layer(dict(os.environ if environ is None else environ))))
    if overrides:
        layers.append(("command-line arguments", overrides))

    merged: dict[str, Any] = {}
    sources: dict[tuple[str, str], str] = {}
    for source, layer in layers:
        _check_keys(layer, source)
        _merge(merged, layer)
        for section, body in layer.items():
            for key in body:
                sources[(section, key)] = source
    return _validate(merged, sources)


def settings_reference() -> list[tuple[str, str, str]]:
    """(key, default, description) for every setting, in declaration order (docs/configuration.md)."""
    rows: list[tuple[str, str, str]] = []
    for section, model in SECTIONS.items():
        instance = model()
        for key, field in model.model_fields.items():
            rows.append((f"{section}.{key}", repr(getattr(instance, key)), field.description or ""))
    return rows
