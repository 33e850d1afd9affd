"""Small windows: a session picks compact tool schemas when the full ones would crowd the window,
sends them, counts them, and the model's calls against them still run."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_helpers import agent_settings, make_project
from stub_openai import StubOpenAI

from mtagent.agent.scripted import ScriptedChatModel, reply, tool_call
from mtagent.agent.session import AgentSession

OPTIONAL = {"task", "recall", "save_memory"}


def _scripted(tmp_path: Path, steps=(), **sections) -> AgentSession:
    return AgentSession.create(make_project(tmp_path), model=ScriptedChatModel(steps=list(steps)),
                               settings=agent_settings(**sections), approval="auto")


def _system_text(session: AgentSession) -> str:
    return str(session.opened.system.messages()[0].content)


@pytest.mark.parametrize("window", [4096, 8192])
def test_a_small_window_gets_compact_schemas_under_the_share(tmp_path: Path, window: int) -> None:
    with _scripted(tmp_path, context={"token_limit": window}) as session:
        choice = session.schema_choice
        share = session.settings.agent.tool_schema_max_share
        assert choice.mode == "compact" and choice.setting == "auto"
        assert choice.full_tokens > share * window  # full: about 3,200 tokens with the system prompt
        assert choice.tokens <= share * window and choice.tokens < choice.full_tokens / 2
        assert set(choice.dropped) == OPTIONAL and not OPTIONAL & set(choice.offered)
        system = _system_text(session)
        assert "## Tools" not in system and "save_memory" not in system
        assert session.opened.system.schema_tokens() == choice.schema_tokens
        assert set(session.tools) >= OPTIONAL  # not offered, still answerable (a resumed call, a stray one)


def test_a_large_window_keeps_full_schemas_and_the_tool_list(tmp_path: Path) -> None:
    with _scripted(tmp_path, context={"token_limit": 131072}) as session:
        choice = session.schema_choice
        assert choice.mode == "full" and choice.tokens == choice.full_tokens and choice.share < 0.03
        assert OPTIONAL <= set(choice.offered)
        system = _system_text(session)
        assert "## Tools" in system and "- recall:" in system and "save_memory only for durable facts" in system


def test_settings_force_either_mode(tmp_path: Path) -> None:
    with _scripted(tmp_path / "a", context={"token_limit": 131072}, agent={"tool_schemas": "compact"}) as session:
        assert session.schema_choice.mode == "compact" and "forced" in session.schema_choice.reason
    with _scripted(tmp_path / "b", context={"token_limit": 4096}, agent={"tool_schemas": "full"}) as session:
        assert session.schema_choice.mode == "full" and "## Tools" in _system_text(session)
    with _scripted(tmp_path / "c", context={"token_limit": 131072}, agent={"tool_schema_max_share": 0.01}) as session:
        assert session.schema_choice.mode == "compact"  # the share is the trigger


def test_the_plan_counts_the_compact_schemas_and_system_prompt_that_were_sent(tmp_path: Path) -> None:
    steps = [tool_call("ls", {"path": "src"}), reply("done")]
    with _scripted(tmp_path, steps, context={"token_limit": 4096}) as session:
        result = session.run_turn("list src")
        assert result.status == "done"
        buckets = session.last_plan.buckets.as_dict()
        assert buckets["tools"] == session.schema_choice.schema_tokens
        fixed = buckets["tools"] + buckets["system"] + buckets.get("session_context", 0)
        assert abs(fixed - session.schema_choice.tokens) <= 0.05 * session.schema_choice.tokens


def test_a_4k_llama_server_gets_compact_schemas_and_a_call_against_them_runs(tmp_path: Path) -> None:
    """The window comes from the server (/props n_ctx = 4096); nothing is configured."""
    models = {"object": "list", "data": [{"id": "smol", "object": "model", "owned_by": "llamacpp"}]}
    props = {"default_generation_settings": {"n_ctx": 4096}}
    steps = [{"content": "", "tool_calls": [{"name": "read_file", "id": "c1",
                                             "args": {"file_path": "src/app.py", "limit": 3}}]},
             {"content": "It returns the cwd."}]
    with StubOpenAI(steps, models=models, props=props) as stub:
        with AgentSession.create(make_project(tmp_path), model="openai:smol", settings=agent_settings(),
                                 base_url=stub.base_url, environ={}, approval="auto") as session:
            assert session.window == 4096 and session.schema_choice.mode == "compact"
            result = session.run_turn("what does app.py do?")
        assert result.status == "done" and result.reply == "It returns the cwd."
        sent = stub.requests[0]["tools"]
        names = {t["function"]["name"] for t in sent}
        assert names and not names & OPTIONAL
        read = next(t for t in sent if t["function"]["name"] == "read_file")["function"]
        assert read["description"] == "Read a text file from the workspace."
        assert read["parameters"]["properties"]["limit"] == {"minimum": 1, "type": "integer"}
        answered = [m for m in stub.requests[1]["messages"] if m.get("role") == "tool"]
        assert "import os" in answered[0]["content"] and "Showing lines 1-3 of 4" in answered[0]["content"]
