"""``mtagent run "task"`` (one shot).

Common options (declared in :mod:`mtagent.cli.session_options`) — ``--resume ID`` / ``--continue``, ``--model provider:name``, ``--base-url``,
``--cwd``, ``--approval ask|allow|deny``, ``--window N`` — are parsed into
:class:`SessionOptions`, which opens the :class:`~mtagent.agent.session.AgentSession`. The
root ``mtagent`` (the REPL) takes the same options.

Exit codes of ``run``: 0 the task finished; 1 the model or a tool failed (or the step limit was
hit); 2 a usage or configuration error; 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import io
import os
import stat
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape

from mtagent.cli.output import console, err_console, fail, user_errors
from mtagent.cli.session_options import (  # noqa: F401  (re-exported: the REPL and tests import them here)
    APPROVAL_MODES, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, SessionOptions, approval_option,
    base_url_option, continue_option, cwd_option, model_option, resume_option, window_option,
)
from mtagent.cli.turn_display import (
    TurnDisplay, denial_markup, denial_reason, make_approver, trouble_markup,
)
from mtagent.errors import MTAgentError, UsageError
from mtagent.terminal_text import json_text, terminal_safe

if TYPE_CHECKING:
    from mtagent.agent.session import AgentSession, TurnResult


def window_warning(session: AgentSession) -> str | None:
    """Say so when a window is too small for the spec's summary reserve and buffer.

    Then the threshold comes from ``context.min_threshold_fraction`` of the room beside the view's
    fixed part (with that at 0 it is the fixed part itself: compaction on every call).
    """
    ctx = session.settings.context
    if session.window > ctx.summary_reserved_tokens + ctx.autocompact_buffer_tokens:
        return None
    threshold = session.threshold  # what the engine fires at, with this session's fixed part
    reserve = (f"context.summary_reserved_tokens ({ctx.summary_reserved_tokens:,}) + "
               f"context.autocompact_buffer_tokens ({ctx.autocompact_buffer_tokens:,})")
    if threshold <= max(1, session.opened.fixed_tokens):
        return (f"a {session.window:,}-token window leaves no room above {reserve}: auto compaction will "
                "fire on every call; set context.auto_compact_threshold (e.g. 0.75) or lower those two settings")
    return (f"a {session.window:,}-token window is smaller than {reserve}; auto compaction fires at "
            f"{threshold:,} tokens ({threshold / session.window:.0%} of the window); "
            "set context.auto_compact_threshold to choose another point")


# ── mtagent run ────────────────────────────────────────────────────────────────────────

def _read_stdin_line(prompt: str) -> str:
    err_console.print(terminal_safe(prompt), end="", markup=False, highlight=False, soft_wrap=True)
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line


def read_task(task: str) -> str:
    """``-`` means the task is on stdin (``echo 'fix it' | mtagent run -``); anything else is the task,
    and what is piped in is appended to it, as simonw/llm does (``git diff | mtagent run "review this"``)."""
    if task != "-":
        piped = _piped_stdin()
        return f"{task}\n\n{piped}" if piped.strip() else task
    if sys.stdin.isatty():
        raise UsageError("`mtagent run -` reads the task from stdin: pipe it in, e.g. "
                         "echo 'fix the failing test' | mtagent run -")
    return sys.stdin.read()


def _piped_stdin() -> str:
    """What a pipe or a redirected file holds on stdin; "" for a terminal (or no stdin at all)."""
    stream = sys.stdin
    if stream is None or stream.closed:
        return ""
    try:
        if stream.isatty():
            return ""
        mode = os.fstat(stream.fileno()).st_mode
        if not stat.S_ISFIFO(mode) and not stat.S_ISREG(mode):
            return ""  # /dev/null, a socket: nothing piped
    except (OSError, ValueError, io.UnsupportedOperation):
        pass  # a stream without a descriptor (a test runner's): read what it holds
    return stream.read()


def run_once(options: SessionOptions, task: str, *, as_json: bool = False,
             opened: dict[str, str] | None = None) -> int:
    """Run one task to the end; returns the exit code (see the module docstring). ``opened`` gets
    the session's id and model once it is open (for ``--json``'s report of a failure)."""
    from mtagent.cli.read_ahead import MAX_MODULE_FILES, module_files, read_ahead, remember_modules, session_files
    from mtagent.cli.warmup import AGENT_STACK, Warmup, modules_for

    # the agent stack imports in the background while the task is read and the kernel reads the
    # session's files (config, transcript tail, context files) and the stack's own into memory
    from mtagent import trust

    trust.refuse_if_changed(options.root)  # nobody is here to answer: a project changed since trusted stops
    read_ahead(module_files(), limit=MAX_MODULE_FILES)
    Warmup(modules_for(options.model) if options.model else AGENT_STACK).start()
    read_ahead(session_files(options.root, resume=options.resume, latest=options.continue_))
    task = read_task(task)
    if not task.strip():
        raise UsageError('the task is empty; e.g. mtagent run "add a --verbose flag to cli.py"')
    # with --json, stdout carries one JSON object only: the streamed answer goes to stderr
    display = TurnDisplay(console=err_console if as_json else console, activity=err_console)
    from mtagent.events import EventBus

    bus = EventBus()
    display.attach(bus)
    session = options.open_session(on_token=display.on_token, events=bus)
    if opened is not None:
        opened.update(session_id=session.session_id, model=session.model_name)
    interactive = sys.stdin.isatty()
    approver = make_approver(err_console, _read_stdin_line, before=display.end_text) if interactive else None
    try:
        err_console.print(f"[dim]session {escape(session.session_id)} · {escape(session.model_name)}[/]")
        for warning in setup_warnings(session):
            err_console.print(f"[yellow]warning:[/] {escape(terminal_safe(warning))}", soft_wrap=True)
        pending = session.pending_approval
        if pending:
            err_console.print("[yellow]this session stopped while a tool call waited for approval; "
                              "settling that first[/]")
            answer = approver(pending) if approver is not None else _settle_unattended(pending, options.approval)
            settled = session.resume_approval(answer, approver=approver)
            _report_denials(list(settled.messages), pending if approver is None else [], answer)
            if settled.status == "interrupted":
                return _finish(display, settled, session, as_json)
            display.take_streamed()
            display.end_text()
        from mtagent.agent.turns import run_unattended  # the session is open: the warm-up imported it

        turn = run_unattended(session, task, NO_TERMINAL, approver=approver)
        _report_denials(turn.messages, turn.denied, _deny_all(turn.denied))
        return _finish(display, turn.result, session, as_json, turn.messages, turn.model_calls)
    finally:
        display.detach()
        session.close()
        remember_modules()  # for the next start's read-ahead; after the turn, not before its first request


def _settle_unattended(requests: list[Any], approval: str) -> dict[str, Any]:
    """A call paused under ``ask``, resumed with no terminal: ``--approval allow|deny`` decides it."""
    mode = APPROVAL_MODES[approval]
    if mode == "auto":
        return {r.tool_call_id: "allow" for r in requests}
    if mode == "never":
        return {r.tool_call_id: {"decision": "deny", "reason": "denied by --approval deny"} for r in requests}
    return _deny_all(requests)


def _deny_all(requests: list[Any]) -> dict[str, Any]:
    """Without a terminal nobody can say yes: refuse, and tell the model why (the user hears it once,
    from :func:`_report_denials`, in the same words)."""
    return {r.tool_call_id: {"decision": "deny", "reason": NO_TERMINAL} for r in requests}


NO_TERMINAL = "no terminal to ask (stdin is not a terminal); rerun with --approval allow to let it run"


def _report_denials(messages: list[Any], requests: Sequence[Any] = (), answer: Any = None) -> None:
    """Each denied tool call, on stderr, once, with its whole reason: why the answer may fall short.
    (A failed call's reason is shown as it happens, by the display.)

    The parent's own denials are read from its tool results in ``messages``. A subagent's call that
    ``answer`` denied has no result among them (it lands in the child's transcript), so it is said
    from the request itself, with the child named."""
    said: set[str] = set()
    for message in messages:
        if getattr(message, "type", None) != "tool" or getattr(message, "status", None) != "error":
            continue
        text = message.content if isinstance(message.content, str) else str(message.content)
        first = next((line.strip() for line in text.splitlines() if line.strip()), "")
        if denial_reason(first) is not None:
            said.add(str(getattr(message, "tool_call_id", "")))
            err_console.print(trouble_markup(str(message.name or "tool"), first), soft_wrap=True)
    for request in requests:
        decision = answer.get(request.tool_call_id) if isinstance(answer, dict) else None
        if request.tool_call_id in said or not isinstance(decision, dict) or decision.get("decision") != "deny":
            continue
        said.add(request.tool_call_id)
        err_console.print(denial_markup(_asker(request), str(decision.get("reason") or "denied")), soft_wrap=True)


def _asker(request: Any) -> str:
    """The tool, and the subagent that asked for it (its requests' rule reads ``subagent …: rule``)."""
    rule = str(getattr(request, "rule", "") or "")
    if rule.startswith("subagent ") and ": " in rule:
        return f"{request.tool} ({rule.split(': ', 1)[0]})"
    return str(request.tool)


def _finish(display: TurnDisplay, result: TurnResult, session: AgentSession, as_json: bool = False,
            messages: list[Any] | None = None, model_calls: int | None = None) -> int:
    streamed = display.take_streamed()
    if result.reply and not streamed.strip() and not as_json:
        console.print(terminal_safe(result.reply), markup=False, highlight=False)
    display.end_text()
    code = EXIT_OK
    if result.status == "interrupted":
        err_console.print(f"interrupted; continue with: mtagent --resume {session.session_id}")
        code = EXIT_INTERRUPTED
    elif result.status == "max_steps":
        err_console.print(f"[bold red]error:[/] stopped after {session.settings.agent.max_steps} model calls "
                          "(agent.max_steps) without finishing; raise it or split the task")
        code = EXIT_FAILED
    if as_json:
        typer.echo(json_text(_json_result(result, session, messages or list(result.messages),
                                          result.model_calls if model_calls is None else model_calls)))
    return code


def _json_result(result: TurnResult, session: AgentSession, messages: list[Any],
                 model_calls: int) -> dict[str, Any]:
    from mtagent.context.ledger import current_plan
    from mtagent.pricing import cost_usd, price_for, usage_of_messages
    from mtagent.tools.sandbox import shell_commands

    usage = usage_of_messages(messages)
    price = price_for(session.model_name, session.settings.agent.prices)
    plan = current_plan(session.history)  # the engine's plan after the turn (update_plan; kept through compactions)
    # the window's size and source, and the tool-schema mode: scripts checking a small model's setup
    window = {"tokens": session.window, "source": session.window_source,
              "tool_schemas": session.schema_choice.to_dict(),
              "tool_catalog": session.parts.toolset.summary()}  # deferral, buckets, loads (context/toolset)
    return {"answer": result.reply, "status": result.status, "session_id": session.session_id,
            "model": session.model_name, "model_calls": model_calls, "tokens": usage.as_dict(),
            "cost_usd": cost_usd(usage, price), "window": window, "plan": plan.to_dict() if plan is not None else None,
            "commands": shell_commands(messages)}


def setup_warnings(session: AgentSession) -> list[str]:
    """Warnings to show when a session opens: what a server said about its window that was refused,
    and a window too small for the summary reserve."""
    return [*session.window_warnings, *filter(None, [window_warning(session)])]


def run(
    task: str = typer.Argument(..., help="What the agent should do; `-` reads it from stdin."),
    resume: str = resume_option(),
    continue_: bool = continue_option(),
    model: str = model_option(),
    base_url: str = base_url_option(),
    cwd: Path = cwd_option(),
    approval: str = approval_option(),
    window: int = window_option(),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object (answer, status, session_id, "
                                 "model, model_calls, tokens, cost_usd) on stdout; the rest goes to stderr."),
) -> None:
    """Run one task to the end and exit (0 done, 1 failed, 2 usage error, 130 interrupted)."""
    options = SessionOptions(cwd=cwd, model=model, base_url=base_url, approval=approval, window=window,
                             resume=resume, continue_=continue_)
    body = (lambda: _json_on_failure(options, task)) if as_json else (lambda: run_once(options, task))
    raise typer.Exit(guarded(body))


def _json_on_failure(options: SessionOptions, task: str) -> int:
    """``run --json``: stdout carries one JSON object whatever happens — on a failure too, with the
    error and the exit code (the one-line error still goes to stderr)."""
    opened: dict[str, str] = {}
    try:
        return run_once(options, task, as_json=True, opened=opened)
    except (typer.Exit, typer.Abort):
        raise
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            status, code, error = "interrupted", EXIT_INTERRUPTED, "interrupted"
        elif isinstance(exc, MTAgentError):
            status, code, error = "error", exc.exit_code, str(exc)
        elif isinstance(exc, Exception):
            status, code, error = "error", EXIT_FAILED, f"{type(exc).__name__}: {exc}"
        else:
            raise
        typer.echo(json_text({"answer": None, "status": status, "error": terminal_safe(error), "exit_code": code,
                              "session_id": opened.get("session_id"), "model": opened.get("model", options.model)}))
        raise


@user_errors
def guarded(body: Callable[[], int]) -> int:
    try:
        return body()
    except KeyboardInterrupt:
        err_console.print("interrupted")
        return EXIT_INTERRUPTED
    except MTAgentError:
        raise
    except Exception as exc:  # a provider SDK or tool bug: one line, not a traceback
        fail(f"{type(exc).__name__}: {exc}", EXIT_FAILED)


def register(app: typer.Typer) -> None:
    app.command("run")(run)
