"""Anthropic prompt caching through langchain-anthropic, against a loopback stub of the Messages API."""

from __future__ import annotations

import copy
import importlib.util
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool

from mtagent.agent.prompt_cache import MAX_BREAKPOINTS, add_cache_breakpoints
from mtagent.context.compaction.cache_align import aligned_request

pytestmark = pytest.mark.skipif(importlib.util.find_spec("langchain_anthropic") is None,
                                reason="langchain-anthropic (the anthropic extra) is not installed")


class Stub(BaseHTTPRequestHandler):
    bodies: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        length = int(self.headers.get("content-length", 0))
        Stub.bodies.append(json.loads(self.rfile.read(length)))
        reply = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
                 "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "stop_sequence": None,
                 "usage": {"input_tokens": 12, "output_tokens": 3, "cache_read_input_tokens": 900,
                           "cache_creation_input_tokens": 50}}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture()
def stub_url():
    Stub.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Stub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return path


MAIN = [
    SystemMessage("You are a coding agent.", id="sys"),
    HumanMessage("Fix core.py", id="u1"),
    AIMessage("", id="a1", tool_calls=[{"id": "toolu_1", "name": "read_file", "args": {"path": "core.py"}}]),
    ToolMessage("def f(): ...", id="t1", tool_call_id="toolu_1"),
]


def _model(url: str):
    from mtagent.agent.models import create_chat_model
    from mtagent.config import Settings

    return create_chat_model("anthropic:claude-test", settings=Settings(), environ={"ANTHROPIC_API_KEY": "sk-test"},
                             anthropic_api_url=url)


def _strip(value):
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def test_the_agents_anthropic_model_sets_breakpoints_on_system_and_the_newest_messages(stub_url):
    model = _model(stub_url).bind_tools([read_file])
    reply = model.invoke(MAIN)
    body = Stub.bodies[0]
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][-2]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert json.dumps(body).count("cache_control") <= MAX_BREAKPOINTS
    assert "cache_control" not in json.dumps(body["messages"][0])
    # cache reads and writes come back in usage_metadata, where the transcript records them
    details = reply.usage_metadata["input_token_details"]
    assert details["cache_read"] == 900 and details["cache_creation"] == 50


def test_a_cache_aligned_summary_request_repeats_the_main_request_on_the_wire(stub_url):
    model = _model(stub_url).bind_tools([read_file])
    model.invoke(MAIN)
    model.invoke(aligned_request(MAIN, delta=False))
    main, summary = Stub.bodies
    assert _strip(summary["system"]) == _strip(main["system"])
    assert summary["tools"] == main["tools"]
    # the last user turn gains the instruction as one more block; everything before is identical
    assert _strip(summary["messages"][:-1]) == _strip(main["messages"][:-1])
    last_main, last_summary = _strip(main["messages"][-1]), _strip(summary["messages"][-1])
    assert last_summary["content"][:len(last_main["content"])] == last_main["content"]
    assert last_summary["content"][-1]["text"].startswith("You are compacting")
    assert summary["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}


def test_breakpoints_respect_the_limit_and_fall_back_to_the_last_tool():
    payload = {"tools": [{"name": "a"}, {"name": "b"}], "messages": [{"role": "user", "content": "hi"}]}
    add_cache_breakpoints(payload)
    assert payload["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert payload["messages"][0]["content"] == [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]
    full = {"system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}] * 4,
            "messages": [{"role": "user", "content": "hi"}]}
    before = copy.deepcopy(full)
    assert add_cache_breakpoints(full) == before
    thinking = {"messages": [{"role": "assistant", "content": [{"type": "text", "text": "x"},
                                                               {"type": "thinking", "thinking": "t"}]}]}
    add_cache_breakpoints(thinking)
    assert "cache_control" in thinking["messages"][0]["content"][0]
    assert "cache_control" not in thinking["messages"][0]["content"][1]


def test_the_sessions_own_model_writes_cache_aligned_hand_offs_with_the_main_tools(tmp_path, stub_url):
    from mtagent.agent.session import AgentSession
    from mtagent.config import Settings
    from mtagent.context.compaction.summarize import LLMSummarizer

    chat = _model(stub_url)
    with AgentSession.create(tmp_path, model=chat, settings=Settings()) as session:
        summarizer = session.window_manager.summarizer
        assert isinstance(summarizer, LLMSummarizer) and summarizer.cache_aligned
        assert summarizer.model.model is session.runtime.model  # the main model with the main request's tools:
        assert summarizer.model.tools() == session.runtime.request_tools()  # the same cached prefix
    off = Settings(context={"cache_aligned_summaries": False})
    with AgentSession.create(tmp_path, model=chat, settings=off) as session:
        assert not session.window_manager.summarizer.cache_aligned
        assert session.parts.opened.session_memory is None or not getattr(session.parts.opened.session_memory.model,
                                                                    "cache_aligned", False)


def test_the_sessions_own_model_writes_cache_aligned_notes(tmp_path, stub_url):
    from mtagent.agent.session import AgentSession
    from mtagent.config import Settings

    chat = _model(stub_url)
    with AgentSession.create(tmp_path, model=chat, settings=Settings()) as session:
        memory = session.parts.opened.session_memory
        assert memory is not None and memory.model.cache_aligned
        assert memory.model.model is session.runtime.model
        assert memory.model.tools() == session.runtime.request_tools()
