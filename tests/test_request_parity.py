"""Every front end sends the model equal requests — messages *and* tool schemas (issue 35).

One scripted session, with the project's real tool set (built-in tools, a user MCP server whose
tools are deferred behind ``tool_search``, a user skill), runs through the REPL, ``mtagent run``,
``AgentSession`` and ``mtagent eval``; what each path hands the model — every call's messages and
the tool schemas that travel with them — is captured at the model and compared across the paths
and against a golden file captured before issue 35's refactoring (``tests/data/requests/``, a request a line;
``PARITY_REGOLD=1`` rewrites it). A ``tool_search`` load must change what the *next* request
carries. The given-tools front ends — ``AgentSession(tools=…)``, ``create_agent`` + the
middleware, a subagent child and replay — are compared in ``tests/integrations/test_engine_parity.py``.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from prompt_toolkit import PromptSession
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console
from typer.testing import CliRunner

from mtagent.agent.scripted import ScriptedChatModel, reply, tool_call
from mtagent.agent.session import AgentSession
from mtagent.cli.app import app
from mtagent.cli.repl import Repl, key_bindings
from mtagent.cli.run_cmd import SessionOptions
from mtagent.eval.policies import load_policy
from mtagent.eval.tasks import read_eval_tasks
from mtagent.eval.worker import EvalUnit, run_unit

GOLDEN = Path(__file__).parent / "data" / "requests" / "session_with_tools.jsonl"
FIXTURE_SERVER = Path(__file__).parent / "tools" / "mcp" / "fixture_server.py"
TASK = "Repeat hello with the fixture server, then read notes.txt."
NOTES = "alpha\nbeta\n"
# what the session context says of the day and the machine (the golden file is for any day and machine)
_VOLATILE = ((re.compile(r"Today's date: [0-9-]+"), "Today's date: <date>"), (re.compile(r"OS: [^\n]*"), "OS: <os>"))
SKILL = "---\nname: release-notes\ndescription: Write release notes from the git log.\n---\nRun git log.\n"


def steps() -> list[Any]:
    """Search the deferred MCP tools, call the loaded one, read a file, answer."""
    return [
        tool_call("tool_search", {"query": "repeat the text echo"}, id="call_search"),
        tool_call("mcp__fx__echo", {"text": "hello"}, id="call_echo"),
        tool_call("read_file", {"file_path": "notes.txt"}, id="call_read"),
        reply("hello; notes.txt says alpha and beta."),
    ]


def script_steps() -> list[dict[str, Any]]:
    """:func:`steps` in the ``--model scripted:FILE`` language (the CLI's paths)."""
    out: list[dict[str, Any]] = []
    for step in steps():
        if step.tool_calls:
            out.append({"tool": step.tool_calls[0]["name"], "args": step.tool_calls[0]["args"]})
        else:
            out.append({"text": step.content})
    return out


# ── capture: what reaches the model, whoever built the request ──────────────────────────────────


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[BaseMessage], list[Any]]]:
    """Every request any :class:`ScriptedChatModel` receives: (messages, tool schemas as sent)."""
    captured: list[tuple[list[BaseMessage], list[Any]]] = []
    original = ScriptedChatModel._next_reply

    def recording(self: ScriptedChatModel, messages: list[BaseMessage], tools: list[Any] | None = None) -> AIMessage:
        captured.append((list(messages), json.loads(json.dumps(tools or [], default=str))))
        return original(self, messages, tools)

    monkeypatch.setattr(ScriptedChatModel, "_next_reply", recording)
    return captured


def normalized(requests: Sequence[tuple[list[BaseMessage], list[Any]]], roots: Sequence[Path],
               *, system: bool = True) -> list[dict[str, Any]]:
    """The requests without what legitimately differs between two runs: the project's path, message
    and tool-call ids (numbered in order of appearance), and — with ``system=False`` — system messages."""
    call_ids: dict[str, str] = {}
    roots = [*roots, *(Path(m) for messages, _ in requests[:1] for x in messages  # where the session says it works
                       for m in re.findall(r"Working directory: ([^\n<]+)", str(x.content)))]

    def cid(value: Any) -> Any:
        return call_ids.setdefault(str(value), f"call_{len(call_ids) + 1}") if value else value

    def text(value: Any) -> Any:
        if isinstance(value, str):
            for pattern, placeholder in _VOLATILE:
                value = pattern.sub(placeholder, value)
        raw = json.dumps(value, sort_keys=True, default=str)
        for root in roots:
            for form in {str(root), str(root.resolve())}:
                raw = raw.replace(form, "<project>")
        for old, new in call_ids.items():
            raw = raw.replace(old, new)
        return json.loads(raw)

    out = []
    for messages, tools in requests:
        rows = []
        for m in messages:
            if not system and (isinstance(m, SystemMessage) or str(m.content).startswith("<session_")):
                continue
            calls = [{"name": c["name"], "args": c.get("args"), "id": cid(c.get("id"))}
                     for c in getattr(m, "tool_calls", None) or []]
            tool_call_id = cid(getattr(m, "tool_call_id", None))
            rows.append({"type": m.type, "content": text(m.content), "tool_calls": text(calls),
                         "tool_call_id": tool_call_id, "status": getattr(m, "status", None)})
        out.append({"messages": rows, "tools": text(sorted(tools, key=lambda t: json.dumps(t, sort_keys=True)))})
    return out


def answered(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The requests that were answered (a retried call sends the same request twice)."""
    return [r for i, r in enumerate(requests) if i + 1 == len(requests) or r != requests[i + 1]]


def tool_names(request: dict[str, Any]) -> list[str]:
    return sorted(t["function"]["name"] for t in request["tools"])


# ── the project: a user MCP server (deferred behind tool_search) and a user skill ──────────────


@pytest.fixture
def project(tmp_path: Path, mtagent_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (mtagent_home / "config.toml").write_text(
        "[mcp]\nready_wait_seconds = 120\n"  # every front end waits for the fixture server, however loaded the machine
        f"[mcp.servers.fx]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(FIXTURE_SERVER))}]\n",
        encoding="utf-8")
    skill = mtagent_home / "skills" / "release-notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL, encoding="utf-8")
    for name, value in {"TOOLS__DEFER": "'always'", "SESSION_MEMORY__ENABLED": "false",
                        "AGENT__RETRY_BASE_SECONDS": "0", "MEMORY__AUTO_EXTRACT": "false",
                        "MCP__READY_WAIT_SECONDS": "120"}.items():  # on a busy machine too: the server is in the catalog
        monkeypatch.setenv(f"MTAGENT_{name}", value)
    root = tmp_path / "proj"
    root.mkdir()
    (root / "notes.txt").write_text(NOTES, encoding="utf-8")
    return root


def write_script(tmp_path: Path) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script_steps()), encoding="utf-8")
    return f"scripted:{path}"


@pytest.fixture
def pipe() -> Iterator[Any]:
    with create_pipe_input() as inp:
        yield inp


def via_repl(project: Path, tmp_path: Path, pipe: Any) -> None:
    console = Console(record=True, width=140, force_terminal=False)
    prompt = PromptSession(input=pipe, output=DummyOutput(), key_bindings=key_bindings(), multiline=True)
    repl = Repl(SessionOptions(cwd=project, model=write_script(tmp_path), approval="allow"), console=console,
                prompt_session=prompt, ask=lambda q: "y")
    pipe.send_text(f"{TASK}\r/exit\r")
    assert repl.run() == 0, console.export_text()


def via_run(project: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["run", "--cwd", str(project), "--model", write_script(tmp_path),
                                      "--approval", "allow", TASK])
    assert result.exit_code == 0, result.output


def via_session(project: Path) -> None:
    with AgentSession.create(project, model=ScriptedChatModel(steps()), approval="auto") as session:
        assert session.run_turn(TASK).status == "done"


def via_eval(project: Path, tmp_path: Path) -> Path:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "parity", "task": TASK, "cwd": str(project.name)}) + "\n", encoding="utf-8")
    task = read_eval_tasks(tasks)[0]
    records = run_unit(EvalUnit(load_policy("mtagent"), (task,), str(tmp_path / "scratch")),
                       lambda _spec: ScriptedChatModel(steps()))
    assert records[0]["status"] == "done", records
    return Path(records[0]["workdir"])


def test_repl_run_session_and_eval_send_equal_requests_tools_included(project, tmp_path, pipe, sent):
    paths: dict[str, list[dict[str, Any]]] = {}
    via_repl(project, tmp_path, pipe)
    paths["repl"] = answered(normalized(sent, [project]))
    sent.clear()
    via_run(project, tmp_path)
    paths["run"] = answered(normalized(sent, [project]))
    sent.clear()
    via_session(project)
    paths["session"] = answered(normalized(sent, [project]))
    sent.clear()
    workdir = via_eval(project, tmp_path)
    paths["eval"] = answered(normalized(sent, [workdir]))

    reference = paths["repl"]
    assert len(reference) == 4
    first, after_search = tool_names(reference[0]), tool_names(reference[1])
    assert "tool_search" in first and "skill" in first and "read_file" in first
    assert "mcp__fx__echo" not in first and "mcp__fx__echo" in after_search  # a load changes the next request
    assert "mcp__fx__echo" in str(reference[0]["messages"]), "the deferred tool is listed by name"
    for name, requests in paths.items():
        assert requests == reference, f"{name} sent other requests than the REPL"

    if os.environ.get("PARITY_REGOLD") == "1":
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in reference), encoding="utf-8")
    golden = [json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines()]  # a request a line
    assert reference == golden, \
        "the requests changed from the golden file (PARITY_REGOLD=1 rewrites it when the change is meant)"
