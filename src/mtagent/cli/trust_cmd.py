"""``mtagent trust [PATH] [--revoke] [--list] [--json]``: let a project's own config relax security.

A repository's ``.mtagent/config.toml`` is written by whoever wrote the repository, so its
security keys (approval rules, extra workspace roots, shell settings, the model endpoint) are
ignored until the user trusts that project here or answers the REPL's first-run question. The
decision is stored in the user's home (``$MTAGENT_HOME/trust.json``), never in the project.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import typer

from mtagent import paths, trust
from mtagent.cli.output import console, user_errors
from mtagent.config import _read_toml


def _project_keys(root: Path) -> list[str]:
    return trust.security_keys_in(_read_toml(paths.project_config_path(root)))


def project_server_lines(root: Path) -> list[str]:
    """The MCP servers the project brings. Only a project with an ``.mcp.json`` or ``mcp`` table pays
    for importing the tools (seconds on a busy machine, before the REPL's first prompt)."""
    try:
        brings = os.path.lexists(root / ".mcp.json") or "mcp" in _read_toml(paths.project_config_path(root))
    except Exception:  # a broken project config: the MCP reader says what is wrong
        brings = True
    if not brings:
        return []
    from mtagent.tools.mcp import project_server_lines as lines

    return lines(root)


def first_run_question(root: Path) -> str | None:
    """The REPL's question for a project never decided on whose config sets security keys (else None)."""
    if trust.decision(root) is not None:
        return None
    keys = _project_keys(root)
    servers = project_server_lines(root)
    if not keys and not servers:
        return None
    runs = "".join(f"\n  MCP server {line}" for line in servers)
    return (f"This project's .mtagent/config.toml sets {', '.join(keys) or 'no security keys'} (it came with "
            f"the repository).{runs}\nTrust this project so they apply{' and run' if servers else ''}? [y/N] ")


def answer_first_run(root: Path, answer: str) -> bool:
    """Store the user's answer to :func:`first_run_question`; anything but yes is no."""
    trusted = answer.strip().lower() in ("y", "yes")
    trust.set_trust(root, trusted)
    _audit(root, trusted)
    return trusted


def _audit(root: Path, trusted: bool) -> None:
    """Trust decisions go to the audit trail (the store named by the user's own settings)."""
    from mtagent.config import load_settings
    from mtagent.session.store import record_audit

    record_audit(load_settings(None), "trust", None, {"project": str(root), "trusted": trusted})


@user_errors
def trust_command(
    path: Path = typer.Argument(Path("."), help="Project folder (default: the current folder)."),
    revoke: bool = typer.Option(False, "--revoke", help="Stop trusting the project: its security keys are "
                                "ignored again."),
    list_: bool = typer.Option(False, "--list", help="List every trust decision instead."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (for scripts)."),
) -> None:
    """Trust a project so its .mtagent/config.toml may set approvals, workspace roots, shell settings
    and the model endpoint (untrusted projects' security keys are ignored with a warning)."""
    if list_:
        decisions = trust.all_decisions()
        if as_json:
            typer.echo(json.dumps(decisions, indent=1, sort_keys=True))
            return
        if not decisions:
            console.print("no trust decisions yet; `mtagent trust PATH` trusts a project", markup=False)
        for key, entry in sorted(decisions.items()):
            console.print(f"{'trusted  ' if entry.get('trusted') else 'untrusted'}  {key}", markup=False)
        return
    root = path.expanduser().resolve()
    if not root.is_dir():
        from mtagent.errors import UsageError

        raise UsageError(f"{path} is not a folder; give the project folder to trust")
    key = trust.set_trust(root, not revoke)
    _audit(root, not revoke)
    keys = _project_keys(root)
    servers = project_server_lines(root)
    if as_json:
        typer.echo(json.dumps({"project": key, "trusted": not revoke, "security_keys": keys, "mcp_servers": servers}))
        return
    verb = "no longer trusted: its" if revoke else "trusted: its"
    what = ", ".join(keys) if keys else "security keys (none set now)"
    console.print(f"{key} is {verb} {what} {'are ignored' if revoke else 'apply'}", markup=False)
    if servers:
        console.print("MCP servers it " + ("no longer starts:" if revoke else "starts when a session needs them:"),
                      markup=False)
        for line in servers:
            console.print(f"  {line}", markup=False)


def register(app: typer.Typer) -> None:
    app.command("trust")(trust_command)
