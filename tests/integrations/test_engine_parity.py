"""One engine behind both front ends: the CLI agent and ``create_agent`` + the middleware record the
same transcript for the same scripted session (modulo ids, timestamps and the system prompt's size),
and the middleware path redacts secrets and retries transient provider errors like the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from mtagent import paths
from mtagent.agent.scripted import ScriptedChatModel, reply, tool_call
from mtagent.agent.session import AgentSession
from mtagent.config import Settings
from mtagent.integrations.langchain import MTContextMiddleware
from mtagent.redaction import REDACTED
from mtagent.session.transcript import read_records

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
