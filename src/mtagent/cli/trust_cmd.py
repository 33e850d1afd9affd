"""``mtagent trust [PATH] [--revoke] [--list] [--json] [--yes]``: let a project's own config relax security.

A repository's ``.mtagent/config.toml``, ``.mcp.json``, skills and agent profiles are written by
whoever wrote the repository, so what of them needs trust (approval rules, workspace roots, shell
settings, the model endpoint, MCP servers, sizes above the defaults, skills) is ignored until the
user trusts the project here or answers the REPL's question. The decision is stored in the user's
home (``$MTAGENT_HOME/trust.json``), never in the project, with the fingerprint of what it covered
(:mod:`mtagent.trust_scope`): a later change is asked about again.

What is asked about is printed *before* anything is recorded, every command whole with its control
characters and newlines shown escaped (:func:`mtagent.trust_scope.visible`) — a name with a newline
cannot print a line of its own, a long command hides nothing past a cut. PATH may also be a task
file (``mtagent eval``): trusting it lets its ``setup``, ``check`` and ``test_patch`` run.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console

from mtagent import trust, trust_scope
from mtagent.cli.output import console, err_console, user_errors
from mtagent.errors import UsageError

_shown: dict[str, dict[str, trust_scope.CoveredItem]] = {}  # the items a REPL question showed, by project


def _item_lines(items: dict[str, trust_scope.CoveredItem]) -> list[str]:
    return [f"{item.label}: {item.shows}" for item in items.values()]


def first_run_question(root: Path) -> str | None:
    """The REPL's question for a project never decided on that brings anything needing trust, or for
    a trusted project that changed since (what changed); None when there is nothing to ask."""
    decided = trust.decision(root)
    if decided is False:
        return None
    items = trust.covered(root)
    if decided is None:
        if not items:
            return None
        _shown[str(root)] = items
        lines = "".join(f"\n  {line}" for line in _item_lines(items))
        return (f"This project brings what needs your trust (it came with the repository):{lines}\n"
                "Trust this project so they apply and run? [y/N] ")
    changes = trust.changes_since_trusted(root)
    if not changes:
        return None
    _shown[str(root)] = items
    lines = "".join(f"\n  {line}" for line in changes)
    return (f"This project changed since you trusted it:{lines}\n"
            "Trust it as it is now (they apply and run)? [y/N] ")


def answer_first_run(root: Path, answer: str) -> bool:
    """Store the user's answer to :func:`first_run_question` — a yes binds to what the question showed.
    Anything but yes is no: a project never decided on is recorded untrusted; a changed one keeps its
    old decision (and is asked about again), and nothing of the change applies."""
    trusted = answer.strip().lower() in ("y", "yes")
    shown = _shown.pop(str(root), None)
    if trusted or trust.decision(root) is None:
        trust.set_trust(root, trusted, covers=shown if trusted else None)
        _audit(root, trusted)
    return trusted


def _audit(root: Path, trusted: bool) -> None:
    """Trust decisions go to the audit trail (the store named by the user's own settings)."""
    from mtagent.config import load_settings
    from mtagent.session.store import record_audit

    record_audit(load_settings(None), "trust", None, {"project": str(root), "trusted": trusted})


def _confirm(question: str, yes: bool, out: Console) -> None:
    """Returns on a yes; a no (or no answer) ends the command with nothing recorded."""
    try:
        if yes or typer.confirm(question, default=False, err=True):
            return
    except (typer.Abort, EOFError):  # no answer (stdin closed): not trusted
        err_console.print("")
    out.print("not trusted: nothing was recorded", markup=False)
    raise typer.Exit(1)


def _list(as_json: bool) -> None:
    decisions = trust.all_decisions()
    if as_json:
        typer.echo(json.dumps(decisions, indent=1, sort_keys=True))
        return
    if not decisions:
        console.print("no trust decisions yet; `mtagent trust PATH` trusts a project", markup=False)
    for key, entry in sorted(decisions.items()):
        state = "trusted  " if entry.get("trusted") else "untrusted"
        if entry.get("trusted") and entry.get("kind") != "file" and Path(key).is_dir() and trust.changes_since_trusted(key):
            state = "changed  "  # trusted once; what it covers changed since (or an old record): untrusted now
        console.print(f"{state}  {trust_scope.visible(key)}", markup=False, soft_wrap=True)


def _trust_project(root: Path, revoke: bool, as_json: bool, yes: bool) -> None:
    items = trust.covered(root)
    lines = _item_lines(items)
    servers = [line for item_id, line in zip(items, lines) if item_id.startswith("mcp:")]
    keys = [item.label for item in items.values() if item.id.startswith("config:")]
    shown = trust_scope.visible(root)
    if revoke:
        trust.set_trust(root, False)
        _audit(root, False)
        if as_json:
            typer.echo(json.dumps({"project": str(root), "trusted": False, "security_keys": keys,
                                   "mcp_servers": servers, "covers": lines}))
        else:
            console.print(f"{shown} is no longer trusted: what it brings is ignored and nothing of it runs",
                          markup=False, soft_wrap=True)
        return
    out = err_console if as_json else console
    changes = trust.changes_since_trusted(root) or []
    if as_json and yes:  # a script: what is trusted is in the JSON ("covers")
        lines, changes = [], []
    if changes and changes != [trust.LEGACY]:
        out.print("Changed since you trusted it:", markup=False)
        for change in changes:
            out.print(f"  {change}", markup=False, soft_wrap=True)
    if lines:
        out.print(f"Trusting {shown} lets these apply and run (they came with the project):", markup=False,
                  soft_wrap=True)
        for line in lines:
            out.print(f"  {line}", markup=False, soft_wrap=True)
    elif not (as_json and yes):
        out.print(f"{shown} brings nothing that needs trust now; whatever it adds later is asked about again",
                  markup=False, soft_wrap=True)
    _confirm("Trust it as shown?", yes, out)
    trust.set_trust(root, True, covers=items)  # what was shown, not what is there a moment later
    _audit(root, True)
    if as_json:
        typer.echo(json.dumps({"project": str(root), "trusted": True, "security_keys": keys, "mcp_servers": servers,
                               "covers": _item_lines(items)}))
    else:
        console.print(f"{shown} is trusted as shown; a change to any of it is asked about again", markup=False,
                      soft_wrap=True)


def _trust_task_file(path: Path, revoke: bool, as_json: bool, yes: bool) -> None:
    """A task file: its setup, check and test_patch commands are shown whole before it is trusted."""
    from mtagent.eval.task_trust import task_commands

    if revoke:
        trust.set_file_trust(path, None)
        console.print(f"{trust_scope.visible(path)} is no longer trusted", markup=False, soft_wrap=True)
        return
    commands, digest = task_commands(path)
    out = err_console if as_json else console
    out.print(f"Trusting {trust_scope.visible(path)} lets these commands run (and its test patches apply):",
              markup=False, soft_wrap=True)
    for line in commands or ["(no setup, check or test_patch in it)"]:
        out.print(f"  {line}", markup=False, soft_wrap=True)
    _confirm("Trust this task file as shown?", yes, out)
    trust.set_file_trust(path, digest)
    if as_json:
        typer.echo(json.dumps({"task_file": str(path), "trusted": True, "commands": commands}))
    else:
        console.print(f"{trust_scope.visible(path)} is trusted as shown; a change to it is refused again",
                      markup=False, soft_wrap=True)


@user_errors
def trust_command(
    path: Path = typer.Argument(Path("."), help="Project folder (default: the current folder), or a task file."),
    revoke: bool = typer.Option(False, "--revoke", help="Stop trusting it: what it brings is ignored again."),
    list_: bool = typer.Option(False, "--list", help="List every trust decision instead."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (for scripts)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Trust without asking (what is trusted is still printed)."),
) -> None:
    """Trust a project so its .mtagent/config.toml may set approvals, workspace roots, shell settings
    and the model endpoint, and its MCP servers and skills may run (shown whole and asked first)."""
    if list_:
        _list(as_json)
        return
    target = path.expanduser().resolve()
    if target.is_file() and target.suffix != ".jsonl":
        raise UsageError(f"{trust_scope.visible(path)} is a file but not a task file (.jsonl); to trust a project, "
                         "give its folder")
    if target.is_file():
        _trust_task_file(target, revoke, as_json, yes)
    elif target.is_dir():
        _trust_project(target, revoke, as_json, yes)
    else:
        raise UsageError(f"{path} is not a folder or a file; give the project folder (or task file) to trust")


def register(app: typer.Typer) -> None:
    app.command("trust")(trust_command)
