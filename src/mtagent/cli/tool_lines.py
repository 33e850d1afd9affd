"""One line saying what a tool call does, and a few saying how it ended — as a user reads them.

``⏺ shell(python3 -c 'print(1/0)')`` then ``  ⎿ exit 1 · ZeroDivisionError: division by zero``:
the command, path, pattern or server tool with its key arguments, cut to the terminal; then the
exit code and a short preview of the output, error lines first. The model wrote the arguments
and a tool (or a server) wrote the output, so both are shown through :func:`terminal_safe`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from mtagent.terminal_text import terminal_safe

PREVIEW_LINES = 3  # of a result's output under its call line
FAILURE_LINES = 6  # of a failure's reason: the reason is often on its second line
_EXIT_MARK = re.compile(r"^\[exit code (-?\d+)\]$")
_ERROR_LINE = re.compile(r"error|exception|traceback|fail|fatal|denied|not found|no such", re.IGNORECASE)
# the argument that says what a call does, per built-in tool (the rest follow as key=value)
_KEY_ARG = {"shell": "command", "read_file": "file_path", "write_file": "file_path", "edit_file": "file_path",
            "ls": "path", "glob": "pattern", "grep": "pattern", "recall": "query", "tool_search": "query",
            "read_tool_result": "ref", "task": "description", "save_memory": "content"}
_QUIET_ARGS = {"content", "new_string", "old_string", "prompt"}  # long bodies: named, not shown


def call_line(tool: str, args: Mapping[str, Any], width: int) -> str:
    """``tool(main argument, key=value, …)`` on one line of at most ``width`` characters."""
    key = _KEY_ARG.get(tool)
    if key is not None and key not in args:
        key = next((k for k in ("path", "file_path", "pattern", "query", "command") if k in args), None)
    parts: list[str] = []
    if key is not None and key in args and key not in _QUIET_ARGS:
        parts.append(_one_line(args[key]))
    for name, value in args.items():
        if name == key:
            continue
        if name in _QUIET_ARGS:
            parts.append(f"{name}=…")
        else:
            parts.append(f"{name}={_one_line(value, quote=True)}")
    return _cut(terminal_safe(f"{tool}({', '.join(parts)})"), width)


def result_lines(content: str, *, failed: bool, exit_code: int | None, width: int, tool: str = "") -> list[str]:
    """The lines shown under a call: how it ended, then a few lines of its output (errors first)."""
    lines = [line.rstrip() for line in content.splitlines()]
    lines = [line for line in lines if line.strip() and not _EXIT_MARK.match(line.strip())]
    bad = failed or bool(exit_code)
    head = f"exit {exit_code}" if exit_code else (f"{tool} failed".strip() if failed else "")
    if not lines:
        return [_cut(terminal_safe(head or "(no output)"), width)]
    limit = FAILURE_LINES if bad else PREVIEW_LINES
    shown = _errors_first(lines, limit) if bad and not failed else lines[:limit]
    rest = len(lines) - len(shown)
    joint = ": " if failed and not exit_code else " · "
    out = [f"{head}{joint}{shown[0]}" if head else shown[0], *shown[1:]]
    if rest > 0:
        out.append(f"… +{rest} line{'s' if rest != 1 else ''}")
    return [_cut(terminal_safe(line), width) for line in out]


def report_lines(content: str, width: int) -> list[str] | None:
    """A subagent's report (the ``task`` tool's JSON result) as a person reads it: its outcome and
    summary, and how many questions it left open; None when ``content`` is not such a report."""
    try:
        report = json.loads(content)
    except ValueError:
        return None
    if not isinstance(report, dict) or "summary" not in report:
        return None
    head = f"{report.get('agent') or 'subagent'} {report.get('outcome') or 'finished'} · {report.get('summary')}"
    lines = [_cut(terminal_safe(_one_line(head)), width)]
    questions = report.get("open_questions")
    if isinstance(questions, list) and questions:
        lines.append(f"{len(questions)} open question{'s' if len(questions) != 1 else ''}")
    return lines


def exit_code_of(artifact: Any) -> int | None:
    """A shell result's exit code from its structured metadata (None for other tools or a time-out)."""
    if isinstance(artifact, Mapping) and artifact.get("kind") == "shell" and not artifact.get("timed_out"):
        code = artifact.get("exit_code")
        return code if isinstance(code, int) and not isinstance(code, bool) else None
    return None


def _errors_first(lines: list[str], limit: int) -> list[str]:
    """A failed command's lines that say why (the error lines, else its last lines), in their order."""
    picked = [i for i, line in enumerate(lines) if _ERROR_LINE.search(line)][-limit:]
    if not picked:
        return lines[-limit:]
    tail = [i for i in range(len(lines) - 1, -1, -1) if i not in picked][: limit - len(picked)]
    return [lines[i] for i in sorted({*picked, *tail})]


def _one_line(value: Any, *, quote: bool = False) -> str:
    if isinstance(value, str):
        text = value if not quote or (value and " " not in value) else json.dumps(value, ensure_ascii=False)
    else:
        text = json.dumps(value, ensure_ascii=False, default=str)
    return " ⏎ ".join(line.strip() for line in text.splitlines() if line.strip()) if "\n" in text else text


def _cut(text: str, width: int) -> str:
    width = max(width, 20)
    return text if len(text) <= width else text[: width - 1] + "…"
