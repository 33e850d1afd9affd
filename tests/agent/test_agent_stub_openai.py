"""The agent against a local OpenAI-compatible server, through the real langchain-openai client."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import HumanMessage

from agent_helpers import agent_settings
from mtagent.agent.models import create_chat_model
from mtagent.agent.session import AgentSession
from mtagent.context.boundary import is_summary_message
from mtagent.context.tokens import count_text_tokens
from mtagent.session.reader import read_records
from stub_openai import StubOpenAI, request_tokens

CANARY = "sk-canary-7f3a9c2e51d84b6f"
WINDOW = 12_000


def _model(stub: StubOpenAI, settings, environ=None):
    return create_chat_model("openai:gpt-4o-mini", settings=settings, base_url=stub.base_url,
                             environ=environ if environ is not None else {"OPENAI_API_KEY": CANARY})


def _last_role(body) -> str:
    return body["messages"][-1]["role"]


def _body_tokens(body) -> int:
    """What a request costs against the window: its messages plus its tool schemas."""
    return request_tokens(body) + count_text_tokens(json.dumps(body.get("tools", [])))


def long_session_settings():
    return agent_settings(
        context={"token_limit": WINDOW, "summary_reserved_tokens": 2_000, "autocompact_buffer_tokens": 1_000,
                 "compression_preserve_min_tokens": 1_500, "compression_preserve_max_tokens": 3_000},
        tool_results={"shell_max_chars": 3_000, "preview_chars": 800},
        agent={"approval": {"shell": "allow"}, "compact_model": "extractive"},  # the stub scripts turns only
    )


def test_a_30_turn_session_with_large_outputs_stays_under_the_window_and_resumes(project):
    """Every request fits the window; an injected 400 is recovered; resume = summary + tail."""
    turn = {"n": 0}
    injected = {"done": False}

    def responder(body):
        if _last_role(body) == "user":
            turn["n"] += 1
            if turn["n"] == 25 and not injected["done"]:
                injected["done"] = True
                turn["n"] -= 1
                return {"error": 400, "code": "context_length_exceeded",
                        "message": "This model's maximum context length is 12000 tokens. "
                                   "However, your messages resulted in 12500 tokens."}
            size = 20_000 if turn["n"] % 3 else 2_500
            command = f"yes 'turn {turn['n']} output line' | head -c {size}"
            return {"content": f"Running step {turn['n']}.",
                    "tool_calls": [{"name": "shell", "args": {"command": command}}]}
        report = f"In turn {turn['n']} the generator printed its lines and every one was checked. " * 25
        return {"content": f"Turn {turn['n']} finished. {report}"}

    settings = long_session_settings()
    with StubOpenAI(responder=responder) as stub:
        with AgentSession.create(project, model=_model(stub, settings), settings=settings) as session:
            for i in range(1, 31):
                result = session.run_turn(f"Step {i}: run the generator and report.")
                assert result.status == "done", result
            sid = session.session_id
            path = session.transcript_path
        assert injected["done"]
        failed_at = next(i for i, b in enumerate(stub.requests) if _last_role(b) == "user"
                         and b["messages"][-1]["content"].startswith("Step 25"))
        assert _body_tokens(stub.requests[failed_at + 1]) < _body_tokens(stub.requests[failed_at])
        sizes = [_body_tokens(b) for b in stub.requests]
        assert max(sizes) < WINDOW, sizes
        records = list(read_records(path))
        boundaries = [r for r in records if r["type"] == "compact_boundary"]
        assert any(b["trigger"] == "reactive" for b in boundaries)
        assert any(b["trigger"] == "auto" for b in boundaries)
        assert sum(1 for r in records if r["type"] == "tool_result_artifact") >= 15

        with AgentSession.resume(None, project, model=_model(stub, settings), settings=settings) as resumed:
            assert resumed.session_id == sid
            history = resumed.history
            assert is_summary_message(history[0])
            assert any(isinstance(m, HumanMessage) and "Step 30" in m.content for m in history)
            before = len(stub.requests)
            resumed.run_turn("Step 31: one more.")
        sent = stub.requests[before]["messages"]
        assert any("<conversation_history_summary>" in (m.get("content") or "") for m in sent)
        assert any("Step 30" in (m.get("content") or "") for m in sent)
        assert _body_tokens(stub.requests[before]) < WINDOW


@pytest.mark.parametrize("passthrough", [[], ["OPENAI_API_KEY", "SERVICE_TOKEN"]],
                         ids=["hidden-from-commands", "passed-through-then-redacted"])
def test_the_api_key_canary_never_reaches_a_payload_or_the_transcript(project, monkeypatch, passthrough):
    """By default a command never sees the key (shell env policy, #27); a user who passes it through
    still never sends it: the output is redacted before the payload and the transcript."""
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    monkeypatch.setenv("SERVICE_TOKEN", "tok-canary-second-secret-value")
    settings = agent_settings(agent={"approval": {"shell": "allow"}}, shell={"env_passthrough": passthrough})
    script = [
        {"tool_calls": [{"name": "shell", "args": {"command": "env; echo key=$OPENAI_API_KEY"}}]},
        {"tool_calls": [{"name": "shell", "args": {
            "command": "python3 -c \"import os; print(os.environ['OPENAI_API_KEY'] * 3000)\""}}]},
        {"content": "done"},
    ]
    with StubOpenAI(script) as stub:
        model = create_chat_model("openai:gpt-4o-mini", settings=settings, base_url=stub.base_url)
        with AgentSession.create(project, model=model, settings=settings) as session:
            assert session.run_turn("show me the environment").status == "done"
            path = session.transcript_path
        assert any(CANARY in h.get("Authorization", h.get("authorization", "")) for h in stub.headers)
        bodies = b"".join(stub.raw_bodies)
    # the canary's own place, not "[redacted]" anywhere: the machine's environment may hold other
    # high-entropy values that `env` prints and the redactor rightly hides (issue 36)
    assert (b"key=[redacted]" in bodies) == bool(passthrough)
    if not passthrough:
        assert b"KeyError" in bodies  # the command ran without the variable
    for secret in (CANARY, "tok-canary-second-secret-value"):
        assert secret.encode() not in bodies
        assert secret not in path.read_text()


def test_rate_limit_server_error_and_timeout_are_retried_within_a_turn(project):
    settings = agent_settings(agent={"max_retries": 3, "request_timeout_seconds": 0.5})
    count_text_tokens("warm up the tokenizer so the stub answers in time")
    script = [{"error": 429}, {"error": 500}, {"sleep": 1.5, "content": "too late"}, {"content": "finally"}]
    with StubOpenAI(script) as stub:
        with AgentSession.create(project, model=_model(stub, settings), settings=settings) as session:
            result = session.run_turn("hello")
            path = session.transcript_path
        assert result.reply == "finally"
        assert len(stub.requests) == 4
    retries = [r for r in read_records(path) if r["type"] == "event" and r["event"] == "model_retry"]
    assert [r["data"]["kind"] for r in retries] == ["rate_limit", "server", "timeout"]


def test_retries_are_bounded_then_one_clear_error(project):
    from mtagent.errors import ModelError

    settings = agent_settings(agent={"max_retries": 1})
    with StubOpenAI([{"error": 503}] * 3) as stub:
        with AgentSession.create(project, model=_model(stub, settings), settings=settings) as session:
            with pytest.raises(ModelError, match="after 2 attempt"):
                session.run_turn("hello")
            assert len(stub.requests) == 2


@pytest.mark.parametrize("streaming", [True, False])
def test_tool_calls_and_a_malformed_call_streamed_or_not(project, streaming):
    tokens: list[str] = []
    settings = agent_settings()
    script = [
        {"content": "Let me look.", "tool_calls": [{"name": "ls", "args": {"path": "src"}}]},
        {"tool_calls": [{"name": "read_file", "args": "{\"file_path\": src/app.py"}]},
        {"content": "The app returns the working directory."},
    ]
    with StubOpenAI(script) as stub:
        with AgentSession.create(project, model=_model(stub, settings), settings=settings,
                                 on_token=tokens.append if streaming else None) as session:
            result = session.run_turn("what does the app do?")
        assert all(bool(b.get("stream")) is streaming for b in stub.requests)
        third = stub.requests[2]["messages"]
    assert result.reply == "The app returns the working directory."
    assert "".join(tokens).startswith("Let me look.") is streaming
    assert third[-1]["role"] == "tool" and "not valid JSON" in third[-1]["content"]
    assert third[-2]["tool_calls"][0]["function"]["name"] == "read_file"


def test_a_configured_compact_model_writes_the_summary(project):
    summary = "## Current state\nHalf done.\n## Next step\nFinish."  # the model's part; the engine renders the ledger

    def responder(body):
        system = body["messages"][0].get("content") or ""
        if "You are compacting the conversation" in system:
            return {"content": summary}
        return {"content": "noted: " + "the work goes on " * 40}

    with StubOpenAI(responder=responder) as stub:
        settings = agent_settings(agent={"compact_model": "openai:gpt-4o-mini", "base_url": stub.base_url},
                                  context={"compression_preserve_min_tokens": 10,
                                           "compression_preserve_max_tokens": 200})
        with AgentSession.create(project, model="openai:gpt-4o", settings=settings,
                                 environ={"OPENAI_API_KEY": CANARY}) as session:
            for i in range(4):
                session.run_turn(f"part {i}: " + "context for the task " * 60)
            result = session.compact("mention the parts")
        compact_requests = [b for b in stub.requests
                            if "You are compacting the conversation" in (b["messages"][0].get("content") or "")]
    assert len(compact_requests) == 1 and compact_requests[0]["model"] == "gpt-4o-mini"
    assert result.summary_source == "llm" and "Half done." in result.summary


SMALL_TAIL = {"compression_preserve_min_tokens": 300, "compression_preserve_max_tokens": 1_000}


def test_without_compact_model_the_session_model_writes_the_summary_and_reads_the_instructions(project):
    """``/compact <instructions>``: the session's own model gets the instructions in its prompt."""
    def responder(body):
        text = json.dumps(body["messages"])
        if "keep the parser decisions" in text:
            return {"content": "## Current state\nHand-off written by the model, keeping the parser decisions."}
        return {"content": "Noted. " + "The parser handles nested blocks now. " * 60}

    settings = agent_settings(context=SMALL_TAIL)
    with StubOpenAI(responder=responder) as stub:
        with AgentSession.create(project, model=_model(stub, settings), settings=settings) as session:
            for i in range(6):
                session.run_turn(f"Step {i}: explain the parser change in detail.")
            result = session.compact("keep the parser decisions")
        asked = [b for b in stub.requests if "keep the parser decisions" in json.dumps(b["messages"])]
    assert asked and result.summary_source == "llm"
    assert "Hand-off written by the model" in result.summary


def test_extractive_by_choice_makes_no_summary_call(project):
    settings = agent_settings(agent={"compact_model": "extractive"}, context=SMALL_TAIL)
    with StubOpenAI(responder=lambda body: {"content": "ok " * 400}) as stub:
        with AgentSession.create(project, model=_model(stub, settings), settings=settings) as session:
            for i in range(6):
                session.run_turn(f"Step {i}.")
            calls = len(stub.requests)
            result = session.compact("keep everything")
        assert len(stub.requests) == calls and result.summary_source == "extractive"
