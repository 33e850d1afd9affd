"""``mtagent sessions list|show|export``: read a project's transcripts (never writes them)."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.rule import Rule
from rich.text import Text

from mtagent import paths
from mtagent.cli.fit import Column, dropped_note, fit_table
from mtagent.cli.output import bare_group_help, console, err_console, fail, fmt_size, user_errors
from mtagent.terminal_text import json_text, sanitize_deep, terminal_safe
from mtagent.cli.session_options import demo_hint, resolve_session_id
from mtagent.errors import ArtifactPathError, UsageError

if TYPE_CHECKING:  # the transcript reader and its LangChain message types load only for show/export
    from mtagent.redaction import Redactor
    from mtagent.session.artifacts import ArtifactStore
    from mtagent.session.reader import ReadReport

PREVIEW_CHARS = 600
# --full shows a body up to this many characters (a 100 MB line would take minutes to lay out)
FULL_MAX_CHARS = 256 * 1024
EXPORT_FORMATS = ("jsonl", "md")
FORMAT_ALIASES = {"markdown": "md", "json": "jsonl"}  # the names people type
ROLE_STYLE = {"user": "bold cyan", "assistant": "bold green", "tool": "bold yellow", "system": "bold magenta"}

F = TypeVar("F", bound=Callable[..., Any])

sessions_app = typer.Typer(help="List, show and export this project's sessions.")
bare_group_help(sessions_app)


def _subagent_transcript(cwd: Path, child_id: str) -> Path | None:
    """A subagent's transcript (``<session>/subagents/<child-id>.jsonl``) by its id, e.g. ``agent-1f2e…``."""
    if not child_id.startswith("agent-"):
        return None
    paths.validate_session_id(child_id)
    found = sorted(paths.history_dir(cwd).glob(f"*/subagents/{child_id}.jsonl"))
    return found[0] if len(found) == 1 else None


def _io_errors(func: F) -> F:
    """Disk trouble while reading a transcript is one line too, not a traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except OSError as exc:
            fail(f"cannot read {exc.filename or 'the transcript'}: {exc.strerror or exc}", 1)

    return wrapper  # type: ignore[return-value]


def _store(cwd: Path | None) -> contextlib.closing[Any]:
    """The configured :class:`~mtagent.session.store.Store`, whichever backend it is; closed after the ``with``."""
    from mtagent.config import load_settings
    from mtagent.session.store import open_store

    return contextlib.closing(open_store(load_settings(cwd or Path.cwd())))


def _transcript(cwd: Path, session_id: str, store: Any, *, beside: bool = True) -> Path:
    """The session's transcript file from the store (a shared store's is an up-to-date local mirror,
    with its artifacts when ``beside``); a subagent's by its id."""
    child = _subagent_transcript(cwd, session_id)
    if child is not None:
        return child
    project = paths.project_hash(cwd)
    sid = resolve_session_id(cwd.resolve(), session_id, store.sessions(project))
    return store.transcript_file(project, sid, beside=beside)


def _when(stamp: datetime | None) -> str:
    return stamp.strftime("%Y-%m-%d %H:%M") if stamp else "-"


def _cwd_option() -> Any:
    return typer.Option(None, "--cwd", help="Project folder (default: the current directory).")


@sessions_app.command("list")
@_io_errors
@user_errors
def list_cmd(
    cwd: Path = _cwd_option(),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON array (id, started, last_activity, "
                                 "messages, size_bytes, compactions, model, path) instead of a table."),
) -> None:
    """This project's sessions: id, start, last activity, messages, size, compactions."""
    root = cwd or Path.cwd()
    with _store(root) as store:
        sessions = store.session_infos(paths.project_hash(root))
    if as_json:
        typer.echo(json_text([{"id": i.session_id, "started": i.started.isoformat() if i.started else None,
                               "last_activity": i.last_activity.isoformat() if i.last_activity else None,
                               "messages": i.messages, "size_bytes": i.size_bytes, "compactions": i.compactions,
                               "model": i.model, "path": str(i.path)} for i in sessions]))
        return
    if not sessions:
        console.print(f"no sessions yet for {escape(str(root.resolve()))}{escape(demo_hint(root))}", soft_wrap=True)
        return
    # the id is what users copy: never cut; on a narrow terminal the model wraps and the least
    # needed columns go first (in a pipe: everything whole, ASCII borders — see cli.output)
    columns = [Column("id"), Column("started", drop=2), Column("last activity", drop=6),
               Column("messages", "right", drop=4), Column("size", "right", drop=1),
               Column("compactions", "right", drop=3), Column("model", drop=5, wrap=True)]
    rows = [[escape(info.session_id), _when(info.started), _when(info.last_activity), str(info.messages),
             fmt_size(info.size_bytes), str(info.compactions), escape(terminal_safe(info.model or "-"))]
            for info in sessions]
    table, dropped = fit_table(console, columns, rows, title=escape(f"sessions of {root.resolve()}"),
                               title_justify="left")
    console.print(table)
    note = dropped_note(dropped)
    if note:
        console.print(note)


def _preview(text: str, full: bool) -> str:
    if full:
        if len(text) <= FULL_MAX_CHARS:
            return text
        return (f"{text[:FULL_MAX_CHARS]}… [{len(text) - FULL_MAX_CHARS:,} more chars; "
                "`sessions export` writes everything]")
    if len(text) <= PREVIEW_CHARS:
        return text
    return f"{text[:PREVIEW_CHARS]}… [{len(text) - PREVIEW_CHARS} more chars; --full shows all]"


def _content_text(content: Any) -> str:
    from mtagent.context.tokens import content_text

    return content_text(content, lambda block: str(block.get("text") or json.dumps(block, ensure_ascii=False)))


def _output_redactor(cwd: Path | None) -> Redactor:
    """Secrets of the environment and the settings (``[security]``, a DSN's password): a transcript
    written before one was configured, or by an older version, is still shown without it."""
    from mtagent.config import load_settings
    from mtagent.redaction import Redactor, collect_secrets

    return Redactor(collect_secrets(settings=load_settings(cwd or Path.cwd())))


def _tool_result_text(rec: dict[str, Any], store: ArtifactStore, full: bool, notes: list[str],
                      redactor: Redactor) -> str:
    text = _content_text(rec.get("content"))
    result = rec.get("toolUseResult") or {}
    artifact = result.get("artifact") if isinstance(result, dict) else None
    if full and isinstance(artifact, str):
        try:
            # artifacts from before redaction-on-write may still hold secrets: redact on the way out
            head = store.read_head(artifact, FULL_MAX_CHARS * 4 + 4)
            return terminal_safe(redactor.text(head))
        except ArtifactPathError as exc:
            notes.append(str(exc))
    return text


def _rule(out: Console, title: str) -> None:
    """A titled rule on a terminal; in a pipe, the title between short dashes (no 2000-column line)."""
    out.print(Rule(title, style="magenta") if out.is_terminal else Text(f"── {title} ──", style="magenta"))


def _render_record(out: Console, rec: dict[str, Any], store: ArtifactStore, full: bool, redactor: Redactor) -> None:
    from mtagent.session import schema

    rec = sanitize_deep(redactor.deep(rec))  # stored text may carry escape sequences: show them, never run them
    kind = rec.get("type")
    stamp = rec.get("timestamp") or ""
    if kind == schema.TRANSCRIPT_MESSAGE:
        role = str(rec.get("role"))
        header = Text(f"{role}", style=ROLE_STYLE.get(role, "bold"))
        header.append(f"  {rec.get('id') or ''}  {stamp}", style="dim")
        notes: list[str] = []
        if role == "tool":
            header.append(f"  {rec.get('name') or ''} ({rec.get('status') or 'success'})", style="yellow")
            body = _tool_result_text(rec, store, full, notes, redactor)
        else:
            body = _content_text(rec.get("content"))
        out.print(header)
        if body:
            out.print(Text(_preview(body, full)))
        for call in rec.get("tool_calls") or ():
            args = json.dumps(call.get("args"), ensure_ascii=False)
            out.print(Text(f"→ {call.get('name')}({_preview(args, full)})  [{call.get('id')}]", style="green"))
        for note in notes:
            out.print(Text(f"! {note}", style="red"))
    elif kind == schema.COMPACT_BOUNDARY:
        _rule(out, f"compact boundary {rec.get('id')} · {rec.get('trigger')} · "
              f"{rec.get('pre_tokens')}→{rec.get('post_tokens')} tokens · first kept {rec.get('first_kept_id')}")
        out.print(Text(_preview(str(rec.get("summary", "")), full), style="magenta"))
    elif kind == schema.COMPRESSION:
        _rule(out, f"compression (v1) · removed {rec.get('removed_count')} · kept {rec.get('kept_count')}")
        out.print(Text(_preview(str(rec.get("summary", "")), full), style="magenta"))
    elif kind == schema.SESSION_START:
        out.print(Text(f"session {rec.get('session_id')} started {stamp} in {rec.get('cwd')} "
                       f"(model {rec.get('model') or '-'}, mtagent {rec.get('mtagent_version') or '-'})",
                       style="bold"))
    elif kind == schema.MICROCOMPACT:
        out.print(Text(f"· microcompact ({rec.get('trigger')}): cleared {len(rec.get('cleared_ids') or [])} "
                       "tool result(s) from the view", style="dim"))
    else:
        from mtagent.cli.session_lines import record_line

        out.print(Text(record_line(rec), style="dim"))


_READABLE = ("transcript_message", "compact_boundary", "compression", "session_start", "microcompact")


def _print_warnings(report: ReadReport) -> None:
    for warning in report.warnings:
        err_console.print(Text(f"warning: {terminal_safe(warning)}", style="yellow"), soft_wrap=True)


@sessions_app.command("show")
@_io_errors
@user_errors
def show_cmd(
    session_id: str = typer.Argument(..., help="Session id, a unique prefix of it, or `latest` (see `mtagent sessions list`)."),
    cwd: Path = _cwd_option(),
    full: bool = typer.Option(False, "--full", help="Show tool results in full, from their artifacts."),
    skip_corrupt: bool = typer.Option(False, "--skip-corrupt", help="Skip unreadable lines instead of stopping."),
    view: bool = typer.Option(False, "--view", help="Show what the model would see on resume."),
    raw: bool = typer.Option(False, "--raw", help="Print context plans and events as their raw JSON records."),
) -> None:
    """Render a session readably: messages, tool calls, results, compactions; plans and events one line each.

    SESSION_ID may be a unique prefix or `latest`.
    """
    with _store(cwd) as store:
        path = _transcript(cwd or Path.cwd(), session_id, store)
    from mtagent.context.view import artifact_store_for, load_transcript  # only here: list and completion stay light
    from mtagent.session import schema
    from mtagent.session.reader import ReadReport, iter_entries

    store = artifact_store_for(path)
    redactor = _output_redactor(cwd)
    if view:
        resumed = load_transcript(path, session_id=session_id, skip_corrupt=skip_corrupt)
        _print_warnings(resumed.report)
        for message in resumed.messages:
            _render_record(console, {**schema.message_to_record(message), "timestamp": ""}, store, full, redactor)
        return
    report = ReadReport()
    for entry in iter_entries(path, skip_corrupt=skip_corrupt, report=report):
        if raw and entry.record.get("type") not in _READABLE:
            line = json.dumps(redactor.deep(entry.record), ensure_ascii=False)
            console.print(Text(terminal_safe(line), style="dim"))
        else:
            _render_record(console, entry.record, store, full, redactor)
    _print_warnings(report)
    _print_plan(path)
    _print_subagents(path)


def _print_plan(path: Path) -> None:
    """The session's plan as the engine holds it now (its last plan call, or the last hand-off's)."""
    from mtagent.context.ledger import plan_from_transcript

    plan = plan_from_transcript(path)
    if plan is not None:
        _rule(console, f"plan · {plan.summary_line()}")
        for line in plan.render().splitlines():
            console.print(Text(terminal_safe(line)), soft_wrap=True)


def _print_subagents(path: Path) -> None:
    """The session's subagents as a tree (each child's status, tokens, summary and transcript)."""
    from mtagent.agent.subagents.tree import subagent_tree, tree_lines

    nodes = subagent_tree(path)
    if nodes:
        _rule(console, "subagents")
        for line in tree_lines(nodes):
            console.print(Text(terminal_safe(line)), soft_wrap=True)


def _markdown(records: Iterator[dict[str, Any]], redactor: Redactor) -> Iterator[str]:
    from mtagent.session import schema

    for rec in records:
        rec = sanitize_deep(redactor.deep(rec))  # a Markdown export is read in terminals too
        kind = rec.get("type")
        if kind == schema.TRANSCRIPT_MESSAGE:
            title = f"## {rec.get('role')}"
            if rec.get("role") == "tool":
                title += f" · {rec.get('name') or ''} ({rec.get('status') or 'success'})"
            yield f"{title}\n\n<!-- id: {rec.get('id')} · {rec.get('timestamp')} -->\n\n"
            text = _content_text(rec.get("content"))
            if text:
                fence = "````" if "```" in text else "```"
                yield f"{fence}\n{text}\n{fence}\n\n" if rec.get("role") == "tool" else f"{text}\n\n"
            for call in rec.get("tool_calls") or ():
                yield f"- tool call `{call.get('name')}` ({call.get('id')}): " \
                      f"`{json.dumps(call.get('args'), ensure_ascii=False)}`\n"
            if rec.get("tool_calls"):
                yield "\n"
        elif kind in (schema.COMPACT_BOUNDARY, schema.COMPRESSION):
            yield f"---\n\n## compaction ({rec.get('trigger', 'v1')})\n\n{rec.get('summary', '')}\n\n---\n\n"
        elif kind == schema.SESSION_START:
            yield f"# session {rec.get('session_id')}\n\nstarted {rec.get('timestamp')} in `{rec.get('cwd')}`" \
                  f", model {rec.get('model') or '-'}\n\n"


@sessions_app.command("export")
@_io_errors
@user_errors
def export_cmd(
    session_id: str = typer.Argument(..., help="Session id, a unique prefix of it, or `latest` (see `mtagent sessions list`)."),
    fmt: str = typer.Option("jsonl", "--format", "-f", help="jsonl (the records) or md / markdown (readable)."),
    output: Path = typer.Option(None, "--output", "-o", help="Write here instead of stdout."),
    cwd: Path = _cwd_option(),
    skip_corrupt: bool = typer.Option(False, "--skip-corrupt", help="Skip unreadable lines instead of stopping."),
) -> None:
    """Export a session as JSONL records or Markdown."""
    fmt = FORMAT_ALIASES.get(fmt.lower(), fmt.lower())
    if fmt not in EXPORT_FORMATS:
        raise UsageError(f"unknown format {fmt!r}; choose from {', '.join(EXPORT_FORMATS)}")
    with _store(cwd) as store:
        path = _transcript(cwd or Path.cwd(), session_id, store, beside=False)
    from mtagent.session.reader import ReadReport, iter_entries

    report = ReadReport()
    raw_lines: dict[int, bytes] = {}
    entries = iter_entries(path, skip_corrupt=skip_corrupt, report=report,
                           on_line=raw_lines.__setitem__ if fmt == "jsonl" else None)
    if fmt == "jsonl":  # the records' own bytes: an export changes nothing (and never re-serialises)
        chunks: Iterator[str] = (raw_lines.pop(e.offset).decode("utf-8") + "\n" for e in entries
                                 if not _forget_before(raw_lines, e.offset))
    else:
        chunks = _markdown((e.record for e in entries), _output_redactor(cwd))
    if output is None:
        try:
            for chunk in chunks:
                sys.stdout.write(chunk)
            sys.stdout.flush()
        except BrokenPipeError:  # the reader stopped (`| head`): no more to write, nothing to report
            _silence_stdout()
            return
    else:
        tmp = output.with_name(f".{output.name}.{os.getpid()}.tmp")
        try:
            with open(tmp, "w", encoding="utf-8", errors="surrogateescape") as fh:
                for chunk in chunks:
                    fh.write(chunk)
            os.replace(tmp, output)
        except OSError as exc:
            if exc.filename not in (str(tmp), str(output)):
                raise
            raise UsageError(f"cannot write {output}: {exc.strerror or exc}") from None
        finally:
            tmp.unlink(missing_ok=True)
        err_console.print(f"wrote {escape(str(output))}")
    _print_warnings(report)
    from mtagent.config import load_settings
    from mtagent.session.store import record_audit

    record_audit(load_settings(cwd), "export", path.stem, {"format": fmt, "to": str(output) if output else "stdout"})


def _forget_before(raw_lines: dict[int, bytes], offset: int) -> bool:
    """Drop raw lines of skipped records (before ``offset``) so memory stays one line; always False."""
    for stale in [o for o in raw_lines if o < offset]:
        del raw_lines[stale]
    return False


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's last flush does not hit the closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def register(app: typer.Typer) -> None:
    from mtagent.cli import migrate_cmd  # `sessions migrate` (files <-> PostgreSQL)

    migrate_cmd.register(sessions_app)
    app.add_typer(sessions_app, name="sessions")
