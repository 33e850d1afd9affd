"""``mtagent config show|path``: the merged settings and where they come from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from mtagent import paths
from mtagent.cli.output import bare_group_help, user_errors

config_app = typer.Typer(help="Show the merged configuration and where it is read from.")
bare_group_help(config_app)
MASK = "***"
MCP_SECRET_FIELDS = ("headers", "env")  # an MCP server's auth header or API key; names stay visible


def mask_mcp_secrets(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (dumped settings) with every MCP server's header and env *value* replaced by ``***``.

    All of them, not only the token-shaped ones the redactor knows: ``DB_PASSWORD = "hunter2"``
    looks like nothing, and a screen share or a pasted log should not need to guess."""
    for server in (data.get("mcp") or {}).get("servers", {}).values():
        for field in MCP_SECRET_FIELDS:
            if isinstance(server, dict) and isinstance(server.get(field), dict):
                server[field] = {name: MASK for name in server[field]}
    return data


@config_app.command("show")
@user_errors
def show(
    cwd: Path = typer.Option(Path("."), "--cwd", help="Project folder whose .mtagent/config.toml applies."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of TOML-like text."),
) -> None:
    """Print every setting after merging defaults, config files, environment and arguments (secrets
    redacted; MCP servers' header and env values shown as ***)."""
    from rich.markup import escape

    from mtagent.cli.output import console
    from mtagent.config import load_settings
    from mtagent.redaction import Redactor, collect_secrets

    settings = load_settings(cwd)
    # a DSN's password, an auth header, the [security] values themselves: shown as [redacted]
    data = mask_mcp_secrets(Redactor(collect_secrets(settings=settings)).deep(settings.model_dump(mode="json")))
    if as_json:
        console.print_json(json.dumps(data))
        return
    for section, body in data.items():
        console.print(f"[bold]{escape(f'[{section}]')}[/]")
        for key, value in body.items():
            console.print(f"{key} = {json.dumps(value)}", markup=False)
        console.print()


@config_app.command("path")
def path(cwd: Path = typer.Option(Path("."), "--cwd", help="Project folder.")) -> None:
    """Print the config files that are read, in order (later ones win)."""
    # plain lines, no config models loaded: a script's quick question
    typer.echo(str(paths.global_config_path()))
    typer.echo(str(paths.project_config_path(cwd.resolve())))


def reference_markdown() -> str:
    """The settings reference table, as docs/configuration.md shows it (a test keeps them equal)."""
    from mtagent.config import settings_reference

    lines = ["| setting | default | meaning |", "|---|---|---|"]
    for key, default, description in settings_reference():
        lines.append(f"| `{key}` | `{default}` | {description.replace('|', '/')} |")
    return "\n".join(lines)


@config_app.command("reference")
def reference() -> None:
    """Print every setting with its default and meaning, as a markdown table."""
    typer.echo(reference_markdown())


def register(app: typer.Typer) -> None:
    app.add_typer(config_app, name="config")
