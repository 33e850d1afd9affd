"""``mtagent doctor``: what this machine gives mtagent — today, which sandbox mode commands run in."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import typer

from mtagent.cli.output import user_errors
from mtagent.config import load_settings
from mtagent.terminal_text import json_text, terminal_safe
from mtagent.tools import sandbox

HELP = "Check this machine: which sandbox mode shell commands run in (bubblewrap), and why."


@user_errors
def doctor_cmd(
    cwd: Path = typer.Option(None, "--cwd", "-C", help="Project whose configuration to read."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON object."),
) -> None:
    """Check this machine: which sandbox mode shell commands run in (bubblewrap), and why.

    Exit 0 when commands run as configured; 1 when ``sandbox.mode = "on"`` and the sandbox cannot
    run (every command would be refused)."""
    settings = load_settings(cwd or Path.cwd())
    found = sandbox.status(settings, notice=False)
    report = {
        "sandbox": "on" if found.active else ("off" if found.mode == "off" else "unavailable"),
        "mode_setting": found.mode, "reason": found.reason, "bwrap": shutil.which("bwrap"),
        "platform": sys.platform, "allow_hosts": list(settings.sandbox.allow_hosts),
        "mcp_servers_sandboxed": settings.sandbox.mcp_servers and found.active,
    }
    if as_json:
        typer.echo(json_text(report))
    else:
        typer.echo(terminal_safe(found.describe()))
        hosts = ", ".join(settings.sandbox.allow_hosts) or "none"
        typer.echo(terminal_safe(f"  network allowed to: {hosts}" if found.active else
                                 f"  bubblewrap: {report['bwrap'] or 'not found'}; platform: {sys.platform}"))
    if found.mode == "on" and not found.active:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("doctor", help=HELP)(doctor_cmd)
