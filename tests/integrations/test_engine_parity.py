"""One engine behind every front end: the CLI agent and ``create_agent`` + the middleware record the
same transcript for the same scripted session (modulo ids, timestamps and the system prompt's size),
and the middleware path redacts secrets and retries transient provider errors like the CLI. A
subagent child and replay, opened by the same opener, send the model equal views and decide every
tool result alike (issue 25: replay used to budget a turn's results together, not as they arrive)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from mtagent import paths
from mtagent.agent.scripted import ScriptedChatModel, reply, tool_call, tool_calls
from mtagent.agent.session import AgentSession
from mtagent.agent.subagents import child as child_module
from mtagent.agent.subagents.profiles import BUILTIN_PROFILES
from mtagent.config import Settings
from mtagent.context.tokens import MessageTokenCounter
from mtagent.integrations.langchain import MTContextMiddleware
from mtagent.redaction import REDACTED
from mtagent.replay.mtagent_strategy import MTAgentStrategy
from mtagent.replay.strategy_base import StrategyContext
from mtagent.session.reader import read_records

SECRET = "sk-parity-0123456789abcdef"
TASK = "Find out why the build fails."


@tool
def build(target: str) -> str:
    """Build a target and return the log (long: over the shell limit, so it is persisted)."""
    return "\n".join(f"[{target}] step {i:05d}: compiling module_{i % 97}.c ... ok" for i in range(1_400))


@tool
def env(name: str) -> str:
    """Print an environment variable (it leaks a key, which must never reach the model or the file)."""
    return f"{name}=production\nSERVICE_API_KEY={SECRET}\n"


@tool
def read(path: str) -> str:
    """Read a small file."""
    return f"# {path}\nprint('hello')\n"


TOOLS = [build, env, read]


def script() -> list[Any]:
    return [
        tool_call("build", {"target": "all"}, id="call_build"),
        ConnectionError("connection reset by peer"),  # transient: retried, never seen by the user
        tool_call("env", {"name": "STAGE"}, id="call_env"),
        tool_call("read", {"path": "src/main.c"}, id="call_read"),
        reply("The build fails in module_42; the key in the environment was redacted."),
    ]


def settings() -> Settings:
    return Settings.model_validate({
        "agent": {"retry_base_seconds": 0.0, "max_retries": 2},
        "tool_results": {"per_tool_max_chars": {"build": 20_000}},
        "session_memory": {"enabled": False},
    })


def comparable(path: Path) -> list[tuple[Any, ...]]:
    """The transcript without what legitimately differs: ids, timestamps, the session header, and
    per-call plans (the CLI's system prompt is larger than the LangChain agent's)."""
    out: list[tuple[Any, ...]] = []
    for rec in read_records(path):
        kind = rec["type"]
        if kind == "transcript_message":
            calls = [(c["name"], c.get("args")) for c in rec.get("tool_calls") or []]
            result = dict(rec.get("toolUseResult") or {})
            out.append(("message", rec["role"], rec.get("content"), calls, rec.get("tool_call_id"),
                        rec.get("name"), rec.get("status"), sorted(result.items(), key=str)))
        elif kind == "event":
            data = rec.get("data") or {}
            out.append(("event", rec["event"], data.get("tool_call_id"), data.get("kind"), data.get("status")))
        elif kind not in ("session_start", "context_plan"):
            out.append((kind, rec.get("tool_call_id"), rec.get("path")))
    return out


def run_cli(project: Path) -> tuple[Path, ScriptedChatModel]:
    model = ScriptedChatModel(script())
    with AgentSession.create(project, model=model, settings=settings(), tools=TOOLS, approval="auto",
                             session_id="parity-cli") as session:
        result = session.run_turn(TASK)
        assert result.status == "done"
        return session.transcript_path, model


def run_middleware(project: Path) -> tuple[Path, ScriptedChatModel, dict[str, Any]]:
    model = ScriptedChatModel(script())
    with MTContextMiddleware(settings=settings(), project_root=project, session_id="parity-lc") as middleware:
        agent = create_agent(model, TOOLS, system_prompt="You are a coding agent.", middleware=[middleware],
                             checkpointer=InMemorySaver())
        out = agent.invoke({"messages": [HumanMessage(TASK)]}, {"configurable": {"thread_id": "parity"}})
    return paths.session_transcript_path(project, "parity-lc"), model, out


def test_cli_agent_and_middleware_record_equal_transcripts(tmp_path, monkeypatch):
    monkeypatch.setenv("PARITY_SERVICE_TOKEN", SECRET)
    (tmp_path / "cli").mkdir()
    (tmp_path / "lc").mkdir()
    cli_path, _ = run_cli(tmp_path / "cli")
    lc_path, _, _ = run_middleware(tmp_path / "lc")

    cli, lc = comparable(cli_path), comparable(lc_path)
    assert cli == lc
    kinds = [row[1] for row in cli if row[0] == "event"]
    assert kinds.count("model_retry") == 1 and kinds.count("tool_started") == kinds.count("tool_finished") == 3
    assert any(row[0] == "tool_result_artifact" for row in cli), "the long build log is persisted in both"


def test_middleware_redacts_secrets_in_results_and_the_transcript(tmp_path, monkeypatch):
    monkeypatch.setenv("PARITY_SERVICE_TOKEN", SECRET)
    path, model, out = run_middleware(tmp_path)

    env_result = next(m for m in out["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == "call_env")
    assert SECRET not in env_result.content and REDACTED in env_result.content
    sent = [m for call in model.calls for m in call if isinstance(m, ToolMessage)]
    assert sent and all(SECRET not in str(m.content) for m in sent)
    assert SECRET not in path.read_text(encoding="utf-8")


def test_middleware_retries_a_transient_error_and_records_it(tmp_path):
    path, model, out = run_middleware(tmp_path)

    assert isinstance(out["messages"][-1], AIMessage) and "module_42" in out["messages"][-1].content
    retries = [r for r in read_records(path) if r["type"] == "event" and r["event"] == "model_retry"]
    assert [(r["data"]["kind"], r["data"]["attempt"]) for r in retries] == [("connection", 1)]
    assert len(model.calls) == 5  # four answered calls and the one that failed


# ── every front end: CLI, middleware, subagent child, replay (issue 25) ─────────────────────────


def run_child(project: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, ScriptedChatModel]:
    """The scripted session as a subagent child (``open_child``: the parent's class, opened as a child)."""
    monkeypatch.setattr(child_module, "ChildTools", lambda profile: list(TOOLS))  # the parity tools
    model = ScriptedChatModel(script())
    with AgentSession.create(project, model=ScriptedChatModel([]), settings=settings(), tools=TOOLS,
                             approval="auto", session_id="parity-parent") as parent:
        child = child_module.open_child(
            parent, child_id="parity-child", profile=BUILTIN_PROFILES["general"], depth=1, model=model,
            model_name="scripted", tool_call_id="call_task", description="parity", cancel=threading.Event(),
            rules=False, tree=parent.subagents)
        try:
            assert child.run_turn(TASK).status == "done"
        finally:
            child.close()
        return child.transcript_path, model


def run_replay(workdir: Path, steps: list[Any] | None = None, tools: list[Any] = TOOLS,
               settings_: Settings | None = None) -> tuple[Path, list[list[Any]]]:
    """The same session as a recording (raw tool outputs) through the replay's mtagent strategy."""
    steps = [s for s in (steps or script()) if isinstance(s, AIMessage)]
    messages: list[Any] = [HumanMessage(TASK, id="task")]
    for step in steps:
        messages.append(step)
        for call in step.tool_calls:
            tool = next(t for t in tools if t.name == call["name"])
            messages.append(ToolMessage(str(tool.invoke(call["args"])), tool_call_id=call["id"], name=call["name"]))
    calls = [i for i, m in enumerate(messages) if isinstance(m, AIMessage)]
    settings_ = settings_ or settings()
    counter = MessageTokenCounter(encoding=settings_.context.encoding,
                                  overhead_tokens=settings_.context.message_overhead_tokens)
    ctx = StrategyContext(system=[], window=settings_.context.token_limit, counter=counter, settings=settings_,
                          workdir=workdir)
    strategy = MTAgentStrategy(ctx)
    views, last = [], 0
    try:
        for index in calls:
            views.append(strategy.step(messages[last:index]).view)
            last = index
    finally:
        strategy.close()
    transcript = next((workdir / "home" / "history").rglob("*.jsonl"))
    return transcript, views


def seen(view: list[Any]) -> list[tuple[Any, ...]]:
    """A model call's view without the system prompt (each front end has its own) and without ids."""
    out = []
    for m in view:
        if isinstance(m, SystemMessage) or (isinstance(m, HumanMessage) and str(m.content).startswith("<session_")):
            continue
        calls = [(c["name"], c.get("args")) for c in getattr(m, "tool_calls", None) or []]
        out.append((m.type, m.content, calls, getattr(m, "tool_call_id", None), getattr(m, "status", None)))
    return out


def answered_views(model: ScriptedChatModel) -> list[list[tuple[Any, ...]]]:
    """The views of the calls that were answered (a retried call sent the same view twice)."""
    views = [seen(call) for call in model.calls]
    return [v for i, v in enumerate(views) if i + 1 == len(views) or v != views[i + 1]]


def decisions(path: Path) -> list[tuple[Any, ...]]:
    """What happened to each tool result: the content the model got and whether the full text was persisted."""
    records = read_records(path)
    persisted = {r["tool_call_id"] for r in records if r["type"] == "tool_result_artifact"}
    return [(r["tool_call_id"], r["content"], r["tool_call_id"] in persisted) for r in records
            if r["type"] == "transcript_message" and r.get("tool_call_id")]


def test_every_front_end_sends_equal_views_and_decides_tool_results_alike(tmp_path, monkeypatch):
    monkeypatch.setenv("PARITY_SERVICE_TOKEN", SECRET)
    for name in ("cli", "lc", "child", "replay"):
        (tmp_path / name).mkdir()
    cli_path, cli_model = run_cli(tmp_path / "cli")
    lc_path, lc_model, _ = run_middleware(tmp_path / "lc")
    child_path, child_model = run_child(tmp_path / "child", monkeypatch)
    replay_path, replay_views = run_replay(tmp_path / "replay")

    cli = answered_views(cli_model)
    assert len(cli) == 4 and all(SECRET not in str(v) for v in cli)
    own = sorted(t.name for t in TOOLS)  # the tool schemas each request carried, too (issue 35)
    carried = [sorted(json.dumps(t, sort_keys=True) for t in ts if t["function"]["name"] in own)
               for ts in cli_model.call_tools]
    assert len(carried[0]) == len(own) and all(c == carried[0] for c in carried)
    for other in (lc_model, child_model):  # the middleware adds its read_tool_result
        assert [sorted(json.dumps(t, sort_keys=True) for t in ts if t["function"]["name"] in own)
                for ts in other.call_tools] == carried
    assert answered_views(lc_model) == cli
    assert answered_views(child_model) == cli
    assert [seen(v) for v in replay_views] == cli

    cli_decisions = decisions(cli_path)
    assert [d[0] for d in cli_decisions] == ["call_build", "call_env", "call_read"]
    assert cli_decisions[0][2] and not cli_decisions[1][2]  # the long log persisted, the short env not
    assert SECRET not in str(cli_decisions)
    assert decisions(lc_path) == decisions(child_path) == decisions(replay_path) == cli_decisions
    assert comparable(child_path) == comparable(cli_path)  # the child's transcript: the same records


@tool
def dump(name: str, chars: int) -> str:
    """Print a generated file of about ``chars`` characters."""
    return "\n".join(f"{name} line {i:06d} " + "x" * 40 for i in range(chars // 60))


def test_replay_budgets_each_result_as_it_arrives_like_the_live_loop(tmp_path):
    """Two results of one turn that together pass the turn's limit: the live loop (CLI, a child) has
    already recorded the first when the second arrives, so only the newcomer can be offloaded.
    Replay used to budget the turn together, largest first, and offloaded the earlier, larger one.
    (The middleware is left out: LangGraph's tool node runs a turn's calls concurrently, so which
    result arrives second is not fixed.)"""
    turn = tool_calls(("dump", {"name": "big", "chars": 24_000}), ("dump", {"name": "small", "chars": 16_000}))
    steps = [turn, reply("both files dumped")]
    tools = [dump]
    settings_ = Settings.model_validate({
        "agent": {"retry_base_seconds": 0.0}, "session_memory": {"enabled": False},
        "tool_results": {"aggregate_max_chars": 30_000, "per_tool_max_chars": {"dump": 25_000}},
    })
    (tmp_path / "cli").mkdir()
    model = ScriptedChatModel(steps)
    with AgentSession.create(tmp_path / "cli", model=model, settings=settings_, tools=tools, approval="auto",
                             session_id="parity-turn") as session:
        assert session.run_turn(TASK).status == "done"
        cli_path = session.transcript_path
    replay_path, replay_views = run_replay(tmp_path / "replay", steps, tools, settings_)

    live = decisions(cli_path)
    assert [persisted for _, _, persisted in live] == [False, True]  # the newcomer went to an artifact
    assert decisions(replay_path) == live
    assert [seen(v) for v in replay_views] == answered_views(model)
