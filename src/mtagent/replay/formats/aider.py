"""aider ``.aider.chat.history.md`` → one trajectory per chat session, by line rules.

* ``# aider chat started at …`` starts a session; ``#### `` lines are user input; ``>`` lines
  are terminal output; every other line belongs to the assistant's reply. Trailing Markdown
  line breaks (two spaces) are stripped.
* An assistant reply followed by terminal output (``Applied edit to …``, lint and test output,
  ``Commit …``) gets one synthetic ``apply_edits`` call with empty arguments, and that output
  is its tool result; the edits themselves stay inline in the reply text (no token is counted
  twice). Terminal output after user input (``/add`` confirmations, ``/run`` output) is
  appended to that user message. Output before the session's first user line (the banner) is
  not context and is dropped.

This is the chat log, not aider's prompt: aider also sends a repo map and the added files
each turn, which the log does not record, so replayed sizes are a lower bound.
"""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import BaseMessage

from mtagent.errors import ReplayFormatError
from mtagent.replay.trajectory import Trajectory, ai, finish, human, tool

FORMAT = "aider"
_START = "# aider chat started at "


def sniff(path: Path, head: str) -> bool:
    return path.suffix == ".md" and (_START in head or "\n#### " in head)


def load(path: Path) -> list[Trajectory]:
    text = path.read_text(encoding="utf-8", errors="replace")
    if _START not in text and "\n#### " not in text:
        raise ReplayFormatError(f"{path} has no '# aider chat started at' or '#### ' lines; expected an aider chat history")
    sessions: list[tuple[str, list[str]]] = [("", [])]
    for raw in text.splitlines():
        line = raw.rstrip()
        if line.startswith(_START):
            sessions.append((line[len(_START):].strip(), []))
        else:
            sessions[-1][1].append(line)
    out: list[Trajectory] = []
    for number, (started, lines) in enumerate(sessions):
        messages = _session_messages(lines, f"s{number}", started or None)
        if any(m.type == "ai" for m in messages):
            out.append(finish(messages, FORMAT, meta={"source": f"{path}#{number}", "started": started or None}))
    if not out:
        raise ReplayFormatError(f"{path} has no assistant replies; expected an aider chat history with at least one exchange")
    return out


def _kind(line: str) -> str:
    if line.startswith("####"):
        return "user"
    if line.startswith(">"):
        return "output"
    return "assistant"


def _blocks(lines: list[str]) -> list[tuple[str, list[str]]]:
    blocks: list[tuple[str, list[str]]] = []
    for line in lines:
        kind = _kind(line)
        body = line[5:] if kind == "user" and line.startswith("#### ") else line[4:] if kind == "user" else line
        if kind == "output":
            body = line[2:] if line.startswith("> ") else line[1:]
        if blocks and blocks[-1][0] == kind:
            blocks[-1][1].append(body)
        elif kind == "assistant" and not body.strip() and (not blocks or blocks[-1][0] != "assistant"):
            continue
        else:
            blocks.append((kind, [body]))
    return blocks


def _session_messages(lines: list[str], prefix: str, started: str | None) -> list[BaseMessage]:
    messages: list[BaseMessage] = []
    seen_user = False
    step = 0
    for i, (kind, body) in enumerate(_blocks(lines)):
        text = "\n".join(body).strip()
        mid = f"{prefix}-{i}"
        if kind == "user":
            seen_user = True
            messages.append(human(text, mid, started))
        elif kind == "output":
            if not seen_user or not text:
                continue
            last = messages[-1] if messages else None
            if last is not None and last.type == "ai":
                step += 1
                call_id = f"call_{prefix}_{step}"
                last.tool_calls = [{"id": call_id, "name": "apply_edits", "args": {}, "type": "tool_call"}]
                messages.append(tool(text, mid, call_id, "apply_edits"))
            elif last is not None and last.type == "human":
                last.content = f"{last.content}\n{text}"
        elif seen_user and text:
            messages.append(ai(text, mid, timestamp=started))
    return messages
