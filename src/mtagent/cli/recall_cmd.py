"""``mtagent recall QUERY``: search this project's sessions, saved tool results and memory.

The same search the model's ``recall`` tool and the REPL's ``/recall`` run: the project's index
is caught up from the transcripts first (so it works for sessions run anywhere), then ranked
hits are printed with their references, authority, freshness and temperature. ``--ref`` prints
one item in full; ``--json`` is for scripts. Every line printed goes through today's redactor (the
index may hold what was written before a secret was configured, and the query is echoed).
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from mtagent import paths
from mtagent.cli.output import console, user_errors
from mtagent.config import load_settings
from mtagent.context.recall import SCOPES
from mtagent.context.recall.render import render_hits
from mtagent.context.recall.sink import project_recaller
from mtagent.errors import UsageError
from mtagent.terminal_text import json_text, terminal_safe

HELP = "Search this project's sessions, saved tool results and memory (what compaction removed)."


@user_errors
def recall_cmd(
    query: str = typer.Argument("", help="Words to find: a path, a function name, an error message."),
    session: str = typer.Option(None, "--session", "-s", help="Only this session (an id from `sessions list`)."),
    scope: str = typer.Option("all", "--scope", help=f"One of {', '.join(SCOPES)}."),
    k: int = typer.Option(None, "-k", "--limit", min=1, max=50, help="How many hits (default recall.default_k)."),
    ref: str = typer.Option(None, "--ref", help="Print one recalled item in full (a ref from an earlier search)."),
    fresh_only: bool = typer.Option(False, "--fresh-only", help="Leave out file reads a later edit made stale."),
    cwd: Path = typer.Option(Path("."), "--cwd", help="The project folder."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON array of hits (or the item, with --ref)."),
) -> None:
    """Search this project's sessions, saved tool results and memory (what compaction removed)."""
    root = cwd.resolve()
    settings = load_settings(root)
    if session:
        paths.validate_session_id(session)
    recaller = project_recaller(root, settings)
    redactor = recaller.redactor  # today's secrets, whatever the index holds
    try:
        recaller.indexer.refresh()
        if ref:
            text = recaller.rehydrate(ref)
            typer.echo(json_text(redactor.deep({"ref": ref, "text": text})) if as_json
                       else terminal_safe(redactor.text(text)))
            return
        if not query.strip():
            raise UsageError("give a QUERY to search for (or --ref REF to print one item); "
                             "e.g. mtagent recall 'TypeError user.id'")
        chosen = "session" if session and scope == "all" else scope
        hits = recaller.search(query, scope=chosen, k=k, session=session,
                               stale="filter" if fresh_only else "mark")
        if as_json:
            typer.echo(json_text(redactor.deep([h.as_dict() for h in hits])))
        else:
            console.print(terminal_safe(redactor.text(render_hits(query, hits, mode=recaller.mode, scope=chosen,
                                                                  backend=recaller.vector_backend))),
                          markup=False, highlight=False, soft_wrap=True)
    finally:
        recaller.indexer.close()


def print_recall(out: Console, cwd: Path, text: str) -> None:
    """``/recall QUERY`` and ``/recall --ref REF`` in the REPL (errors are the caller's one line)."""
    words = text.split()
    root = cwd.resolve()
    recaller = project_recaller(root, load_settings(root))
    redactor = recaller.redactor
    try:
        recaller.indexer.refresh()
        if words[:1] == ["--ref"]:
            if len(words) != 2:
                raise UsageError("usage: /recall --ref <ref> (a ref printed by /recall)")
            out.print(terminal_safe(redactor.text(recaller.rehydrate(words[1]))), markup=False, highlight=False,
                      soft_wrap=True)
            return
        if not text.strip():
            raise UsageError("usage: /recall QUERY — e.g. /recall TypeError user.id")
        hits = recaller.search(text)
        out.print(terminal_safe(redactor.text(render_hits(text, hits, mode=recaller.mode,
                                                          backend=recaller.vector_backend))),
                  markup=False, highlight=False, soft_wrap=True)
    finally:
        recaller.indexer.close()


def register(app: typer.Typer) -> None:
    app.command("recall", help=HELP)(recall_cmd)
