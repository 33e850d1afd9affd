"""``mtagent demo``: the real agent loop over a real code base, with a scripted policy for a model.

Everything except the model is the product: the LangGraph loop, approvals, the tools (with their
result budget and artifacts), the transcript, the context engine (microcompact, session memory,
compaction) and resume. In place of the model a **scripted demo policy** — clearly labelled in
every message it writes — decides each next tool call from what it has seen: it lists the code
base, greps it, hands a survey of its classes to an ``explore`` subagent (which reports back in a
structured report), reads files (paging when a read is refused as too large), runs a command, copies a
file into a scratch folder *outside the code base* and edits the copy, checks the edit, and keeps
reading until it has seen the engine compact its context. The window is deliberately small (16K)
so that offloading, microcompact and compaction all visibly happen in well under a minute.

:func:`run_demo` returns a :class:`DemoResult` read back from the transcript, the same truth
``mtagent sessions show`` and ``--resume`` use.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from mtagent import paths
from mtagent.agent.scripted import ScriptedChatModel
from mtagent.config import Settings
from mtagent.context.boundary import is_summary_message
from mtagent.context.tokens import count_text_tokens
from mtagent.session import schema
from mtagent.session.reader import read_records

DEFAULT_WINDOW = 16_384
POLICY_LABEL = "[scripted demo policy — not a model]"
DEMO_MODEL_NAME = "scripted:demo-policy"
# How far the policy goes: files it reads at most, and model calls it makes at most.
MAX_FILES_READ = 24
MAX_STEPS = 80
_SOURCE_PATH = re.compile(
    r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.(?:py|md|txt|rst|toml|ya?ml|json|js|ts|tsx|go|rs|java|c|h|cc|cpp|rb|sh))\b"
)
_LIMIT_HINT = re.compile(r"limit=(\d+)")
_NUMBERED = re.compile(r"^\s*\d+\t(.*)$")


def demo_settings(window: int = DEFAULT_WINDOW, scratch: Path | None = None) -> Settings:
    """Spec defaults scaled to a small window, so every engine stage has room to act.

    The spec's numbers are for a 128K window (20K reserved for the summary, 13K buffer, a
    10K–40K tail); on 16K they would leave nothing. Each is scaled by the same proportion.
    """
    return Settings.model_validate({
        "context": {
            "token_limit": window,
            "summary_reserved_tokens": window // 8,
            "autocompact_buffer_tokens": window // 16,
            "compression_preserve_min_tokens": window // 10,
            "compression_preserve_max_tokens": window // 5,
            "reattach_max_files": 1,
            "reattach_max_tokens": window // 16,
        },
        "tool_results": {"grep_max_chars": 4_000, "shell_max_chars": 4_000, "default_max_chars": 6_000,
                         "aggregate_max_chars": 12_000, "preview_chars": 1_200},
        "read_file": {"max_tokens": window // 5},
        "microcompact": {"keep_recent": 3, "size_trigger_fraction": 0.5},  # show clearing, off by default
        "session_memory": {"init_tokens": window // 3, "update_min_tokens": window // 8,
                           "section_max_tokens": window // 40, "total_max_tokens": window // 8},
        "agent": {"max_steps": MAX_STEPS, "workspace_extra_roots": [str(scratch)] if scratch else [],
                  "max_retries": 0},
    })


def _said(message: AIMessage, text: str) -> AIMessage:
    return message.model_copy(update={"content": f"{POLICY_LABEL} {text}"})


@dataclass
class DemoPolicy:
    """Picks the next tool call from the conversation so far (see the module docstring).

    It keeps a small plan of its own, as a model keeps its intentions in mind: the file list it
    learned from ``glob``, what it has read, and where it stands in the copy-and-edit chore.
    """

    root: Path
    scratch: Path
    max_files: int = MAX_FILES_READ
    read_max_tokens: int = 0  # read_file's limit: a larger file is read as its first page, not refused
    files: list[str] = field(default_factory=list)
    read: list[str] = field(default_factory=list)
    stage: str = "ls"
    copy_source: str | None = None
    copy_path: str | None = None
    edited_line: str | None = None
    saw_compaction: bool = False
    _calls: int = 0

    def _call(self, name: str, args: dict[str, Any], why: str) -> AIMessage:
        self._calls += 1
        call = {"name": name, "args": args, "id": f"demo_call_{self._calls:03d}", "type": "tool_call"}
        return _said(AIMessage(content="", tool_calls=[call]), why)

    def __call__(self, messages: list[BaseMessage]) -> AIMessage:
        self.saw_compaction = self.saw_compaction or any(is_summary_message(m) for m in messages)
        last = messages[-1] if messages else None
        result = last if isinstance(last, ToolMessage) else None
        return self._next(result)

    def _next(self, result: ToolMessage | None) -> AIMessage:
        text = result.content if result is not None and isinstance(result.content, str) else ""
        failed = result is not None and result.status == "error"
        if self.stage == "ls":
            self.stage = "glob"
            return self._call("ls", {"path": "."}, "Start by looking at the top of the code base.")
        if self.stage == "glob":
            self.stage = "glob_any"
            return self._call("glob", {"pattern": "**/*.py"}, "List every Python file to choose what to read.")
        if self.stage == "glob_any":
            self.files = self._largest_first(_SOURCE_PATH.findall(text))
            self.stage = "grep"
            if not self.files:
                return self._call("glob", {"pattern": "**/*"}, "No Python here; list every file instead.")
        if self.stage == "grep":
            self.files = self.files or self._largest_first(_SOURCE_PATH.findall(text))
            self.stage = "delegate"
            return self._call("grep", {"pattern": r"^\s*(def|class|function|fn|func) ", "max_results": 5_000},
                              "Map every function and class definition (a large result: expect it offloaded).")
        if self.stage == "delegate":
            self.stage = "shell"
            return self._call("task", {"description": "map the classes", "agent": "explore",
                                       "prompt": "Find where the main classes of this code base are defined and "
                                                 "report the first few with file:line evidence."},
                              "Hand the class survey to an explore subagent: only its report enters this window.")
        if self.stage == "shell":
            self.stage = "python"
            return self._call("shell", {"command": "ls -la"}, "Look at the folder with sizes from the shell.")
        if self.stage == "python":
            self.stage = "read"
            code = "import platform, sys; print(sys.version.split()[0], platform.system())"
            return self._call("shell", {"command": f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"},
                              "Check which Python runs here.")
        if self.stage == "read":
            return self._read_next(text, failed)
        if self.stage == "copy":
            return self._copy_next(text, failed)
        return _said(AIMessage(content=""), self._final_report())

    def _largest_first(self, found: Sequence[str]) -> list[str]:
        unique = list(dict.fromkeys(found))
        sizes = {f: (self.root / f).stat().st_size if (self.root / f).is_file() else 0 for f in unique}
        return sorted((f for f in unique if sizes[f] > 0), key=lambda f: -sizes[f])

    def _read_next(self, text: str, failed: bool) -> AIMessage:
        hint = _LIMIT_HINT.search(text) if failed else None
        if hint and self.read:
            return self._call("read_file", {"file_path": self.read[-1], "offset": 1, "limit": int(hint.group(1))},
                              f"That read was refused as too large; page {self.read[-1]} instead.")
        if len(self.read) == 3 and self.copy_source is None:
            self.stage = "copy"
            return self._copy_next("", False)
        remaining = [f for f in self.files if f not in self.read]
        if not remaining or len(self.read) >= self.max_files or (self.saw_compaction and len(self.read) >= 8):
            self.stage = "done"
            return _said(AIMessage(content=""), self._final_report())
        target = remaining[0]
        self.read.append(target)
        lines = self._lines_that_fit(target)
        if lines is not None:
            return self._call("read_file", {"file_path": target, "offset": 1, "limit": lines},
                              f"Read the first {lines} lines of {target} (file {len(self.read)}): the whole file "
                              "is over the read limit, so page it.")
        return self._call("read_file", {"file_path": target}, f"Read {target} (file {len(self.read)}).")

    def _lines_that_fit(self, target: str) -> int | None:
        """How many first lines of ``target`` fit read_file's limit (numbered as it returns them, with a
        margin); None when the whole file fits or there is no limit — a capable model pages a large
        file instead of asking for all of it and being refused."""
        if self.read_max_tokens <= 0:
            return None
        try:
            lines = (self.root / target).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return None
        budget, used = int(self.read_max_tokens * 0.8), 0
        for count, line in enumerate(lines):
            used += count_text_tokens(f"{count + 1:6d}\t{line}\n")
            if used > budget:
                return max(count, 1)
        return None

    def _copy_next(self, text: str, failed: bool) -> AIMessage:
        if self.copy_source is None:
            self.copy_source = self.read[0]
            self.copy_path = str(self.scratch / Path(self.copy_source).name)
            command = (f"cp {shlex.quote(str(self.root / self.copy_source))} {shlex.quote(self.copy_path)} "
                       "&& echo copied")
            return self._call("shell", {"command": command},
                              f"Copy {self.copy_source} into a scratch folder outside the code base.")
        assert self.copy_path is not None
        if failed:
            self.stage = "read"
            return self._read_next("", False)
        if self.edited_line is None and "\t" not in text:
            return self._call("read_file", {"file_path": self.copy_path, "limit": 60, "offset": 1},
                              "Read the top of the scratch copy before editing it.")
        if self.edited_line is None:
            self.edited_line = self._editable_line(text) or ""
            if not self.edited_line:
                self.stage = "read"
                return self._read_next("", False)
            return self._call("edit_file", {"file_path": self.copy_path, "old_string": self.edited_line,
                                            "new_string": f"{self.edited_line}  # edited by the mtagent demo"},
                              "Edit the scratch copy (never the code base itself).")
        self.stage = "read"
        check = (f"{shlex.quote(sys.executable)} -m py_compile {shlex.quote(self.copy_path)} && "
                 f"diff {shlex.quote(str(self.root / str(self.copy_source)))} {shlex.quote(self.copy_path)}; true")
        return self._call("shell", {"command": check}, "Verify the edited copy still compiles and show the diff.")

    @staticmethod
    def _editable_line(numbered: str) -> str | None:
        """An import line from read_file output: appending a comment to it keeps the code valid."""
        lines = [m.group(1) for m in map(_NUMBERED.match, numbered.splitlines()) if m]
        counts = {line: lines.count(line) for line in lines}
        for line in lines:
            if line.startswith(("import ", "from ")) and counts[line] == 1 and "(" not in line:
                return line
        return None

    def _final_report(self) -> str:
        edited = f"edited a scratch copy of {self.copy_source} at {self.copy_path}" if self.edited_line else \
            "did not find a line to edit safely"
        return (f"Explored {len(self.files)} Python files, read {len(self.read)} of them, ran two shell "
                f"commands, {edited}. Compaction seen: {'yes' if self.saw_compaction else 'no'}.")


@dataclass
class SubagentDemoPolicy:
    """The demo's explore child: greps for class definitions, reads the top of one file, reports.

    Its final answer is a structured report (JSON), as any child's must be; like the parent's
    messages it is labelled as scripted.
    """

    calls: int = 0
    hits: list[str] = field(default_factory=list)
    read: str | None = None

    def __call__(self, messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1] if messages else None
        text = last.content if isinstance(last, ToolMessage) and isinstance(last.content, str) else ""
        self.calls += 1
        call = {"id": f"demo_child_{self.calls:03d}", "type": "tool_call"}
        if self.calls == 1:
            return _said(AIMessage(content="", tool_calls=[{**call, "name": "grep", "args": {
                "pattern": r"^class \w+", "max_results": 40}}]), "Find the class definitions.")
        if self.calls == 2:
            self.hits = [line for line in text.splitlines() if re.match(r"^[\w./-]+:\d+:", line)][:5]
            if self.hits:
                self.read = self.hits[0].split(":", 1)[0]
                return _said(AIMessage(content="", tool_calls=[{**call, "name": "read_file", "args": {
                    "file_path": self.read, "limit": 30}}]), f"Read the top of {self.read}.")
        findings = [{"claim": hit.split(":", 2)[2].strip()[:120] or hit, "evidence": [":".join(hit.split(":")[:2])]}
                    for hit in self.hits]
        report = {"outcome": "success" if self.hits else "partial",
                  "summary": f"Found {len(self.hits)} class definitions"
                             + (f"; read the top of {self.read}." if self.read else "."),
                  "findings": findings, "files_read": [self.read] if self.read else []}
        return _said(AIMessage(content=""), json.dumps(report))


@dataclass(slots=True)
class DemoResult:
    """What the demo did: the run's own figures and what its tool results kept out of the window, read
    back from the transcript (its compactions, microcompacts and subagents are in the session's
    report, :func:`mtagent.cli.session_report.read_session_report`, as for any session)."""

    session_id: str
    transcript_path: Path
    cwd: Path
    scratch: Path
    window: int
    seconds: float
    model_calls: int
    tool_calls: int
    persisted_results: int
    persisted_tokens_saved: int
    final_reply: str
    threshold: int = 0  # where the session's auto compaction fires (its window and fixed part)


def summarize_transcript(path: Path, artifacts_root: Path) -> dict[str, int]:
    """The tool calls, and the results persisted with the tokens the model did not have to read."""
    persisted = tool_calls = saved = 0
    for record in read_records(path):
        if record.get("type") != schema.TRANSCRIPT_MESSAGE:
            continue
        if record.get("role") == "assistant":
            tool_calls += len(record.get("tool_calls") or [])
        elif record.get("role") == "tool":
            artifact = (record.get("toolUseResult") or {}).get("artifact")
            if artifact:
                persisted += 1
                full = (artifacts_root / artifact)
                if full.is_file():
                    shown = record.get("content") if isinstance(record.get("content"), str) else ""
                    saved += max(0, count_text_tokens(full.read_text(errors="replace")) - count_text_tokens(shown))
    return {"persisted": persisted, "saved": saved, "tool_calls": tool_calls}


def run_demo(cwd: str | Path, window: int = DEFAULT_WINDOW, *,
             settings: Settings | None = None, max_files: int = MAX_FILES_READ,
             events: Any = None) -> DemoResult:
    """Run the demo on ``cwd`` (``mtagent demo``'s default is the installed package's own source:
    :func:`mtagent.cli.session_options.demo_root`).

    ``events``: an :class:`~mtagent.events.EventBus` to watch the engine work as it works (the CLI
    shows tool calls, offloaded results, microcompact and compaction live)."""
    from mtagent.agent.session import AgentSession

    began = time.perf_counter()
    root = Path(cwd).expanduser().resolve()
    session_id = schema.new_session_id()
    scratch = paths.ensure_dir(paths.session_artifact_dir(root, session_id) / "scratch")
    settings = settings or demo_settings(window, scratch)
    policy = DemoPolicy(root=root, scratch=scratch, max_files=max_files,
                        read_max_tokens=settings.read_file.max_tokens)
    model = ScriptedChatModel(policy=policy, model_name=DEMO_MODEL_NAME)
    with AgentSession.create(root, model=model, settings=settings, approval="auto",
                             session_id=session_id, events=events) as session:
        session.subagents.model_factory = lambda profile, request: (
            ScriptedChatModel(policy=SubagentDemoPolicy(), model_name=DEMO_MODEL_NAME), DEMO_MODEL_NAME)
        result = session.run_turn(
            "Explore this code base: map its modules, read the main files, run a quick command, and "
            "practise an edit on a scratch copy of one file (never edit the code base itself).")
        transcript = session.transcript_path
        artifacts_root = session.artifacts.root
        threshold = session.threshold
    counts = summarize_transcript(transcript, artifacts_root)
    return DemoResult(
        session_id=session_id, transcript_path=transcript, cwd=root, scratch=scratch, window=window,
        seconds=time.perf_counter() - began, model_calls=result.model_calls, tool_calls=counts["tool_calls"],
        persisted_results=counts["persisted"], persisted_tokens_saved=counts["saved"], final_reply=result.reply,
        threshold=threshold,
    )
