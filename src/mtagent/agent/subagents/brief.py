"""A child's narrow input: its system prompt and the one message that starts it.

Spec 003 (Boundary): input narrow — task + constraints + references. A child never sees the
parent's history. It gets the profile's instructions and the report format, and only the
context items the parent selected for it:

* ``rules`` — the project's static context (CONTEXT.md, rules, project memory), as the parent
  has it;
* ``task_state`` — the parent's session notes (the running task state), bounded;
* ``files`` — named workspace files, confined to the workspace and bounded in all.

Anything the parent did not name stays out; an unknown context item or a file outside the
workspace is said in the brief (so the child knows it is missing), never silently dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from langchain_core.messages import HumanMessage

from mtagent.confine import default_redactor
from mtagent.context.tokens import count_text_tokens
from mtagent.errors import WorkspacePathError
from mtagent.frames import frame
from mtagent.tools.task import CONTEXT_ITEMS, TaskRequest
from mtagent.tools.workspace import Workspace

BYTES_PER_TOKEN_CAP = 8  # read at most this many bytes per token of budget before counting


@dataclass(slots=True)
class Brief:
    """What a child starts from, and what the parent asked for but could not be handed over."""

    message: HumanMessage
    files: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def _read_bounded(workspace: Workspace, raw: str, budget_tokens: int) -> tuple[str, str] | str:
    """(shown path, text) of a workspace file cut to ``budget_tokens``; or why it cannot be given."""
    try:  # opened as the file tools open: descriptor walk, one link only (#27), then redacted
        path = workspace.resolve(raw)
        with workspace.open_read(path) as (fh, _st):
            data = fh.read(max(1, budget_tokens) * BYTES_PER_TOKEN_CAP)
    except WorkspacePathError as exc:
        return str(exc)
    except OSError as exc:
        return f"cannot open {raw!r}: {exc.strerror}"
    if b"\0" in data[:8192]:
        return f"{raw!r} is a binary file"
    text = default_redactor().text(data.decode("utf-8", errors="replace"))
    while text and count_text_tokens(text) > budget_tokens:
        text = text[: int(len(text) * 0.8)]
    return workspace.relative(path), text


def build_brief(request: TaskRequest, *, workspace: Workspace, task_state: str | None, files_max_tokens: int,
                task_state_max_tokens: int) -> Brief:
    """The child's first message: the task, then the context items the parent selected."""
    brief = Brief(HumanMessage(content=""))
    # the task (a model wrote it), the notes and the files are framed: none can close its frame (#33)
    parts = [frame("task", request.prompt.strip(), description=request.description)]
    for item in request.context:
        if item not in CONTEXT_ITEMS:
            brief.missing.append(f"context item {item!r} is unknown (use {', '.join(CONTEXT_ITEMS)})")
    if "task_state" in request.context:
        if task_state and task_state.strip():
            text = task_state.strip()
            while text and count_text_tokens(text) > task_state_max_tokens:
                text = text[: int(len(text) * 0.8)]
            parts.append(frame("task_state", text, source="parent session notes"))
        else:
            brief.missing.append("task_state: the parent has no session notes yet")
    left = files_max_tokens
    for raw in dict.fromkeys(request.files):
        if left <= 0:
            brief.missing.append(f"file {raw!r}: the files budget ({files_max_tokens} tokens) is used up")
            continue
        got = _read_bounded(workspace, raw, left)
        if isinstance(got, str):
            brief.missing.append(f"file {raw!r}: {got}")
            continue
        shown, text = got
        left -= count_text_tokens(text)
        brief.files.append(shown)
        parts.append(frame("file", text, path=shown))
    if brief.missing:
        parts.append(frame("not_provided", "\n".join(f"- {m}" for m in brief.missing)))
    brief.message = HumanMessage(content="\n\n".join(parts))
    return brief

