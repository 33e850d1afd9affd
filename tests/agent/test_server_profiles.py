"""Server profiles against the stub in each real server's quirk mode: detection from /v1/models,
the request options each profile sends, bounded output and a total deadline per call."""

from __future__ import annotations

import time

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from agent_helpers import agent_settings
from mtagent.context.model_errors import ErrorKind, classify, to_model_error
from mtagent.agent.models import create_chat_model, max_output_tokens
from mtagent.agent.server_profiles import detect_server, guess_from_models
from stub_openai import StubOpenAI

LLAMA_SERVER_MODELS = {"models": [{"name": "smol", "model": "smol"}], "object": "list",
                       "data": [{"id": "smol", "object": "model", "owned_by": "llamacpp",
                                 "meta": {"n_ctx_train": 8192}}]}
ANSWERS = [
    (LLAMA_SERVER_MODELS, "llamacpp"),
    ({"object": "list", "data": [{"id": "smol", "object": "model", "owned_by": "me", "permissions": []}]}, "llamacpp"),
    ({"object": "list", "data": [{"id": "q", "object": "model", "owned_by": "vllm", "root": "q",
                                  "max_model_len": 4096}]}, "vllm"),
    ({"object": "list", "data": [{"id": "llama3.2:latest", "object": "model", "owned_by": "library"}]}, "ollama"),
    ({"object": "list", "data": [{"id": "qwen", "object": "model", "owned_by": "organization_owner"}]}, "lmstudio"),
]
QUIRKS = {"tools_need_tool_choice", "empty_stream_with_tools", "null_content_500", "html_escape"}


@tool
def write_file(path: str, text: str) -> str:
    """Write text to a file."""
    return "ok"


@pytest.mark.parametrize(("answer", "name"), ANSWERS)
def test_auto_detects_the_server_from_its_models_answer_once(answer, name) -> None:
    assert guess_from_models(answer) == name
    with StubOpenAI(models=answer) as stub:
        assert detect_server(stub.base_url) == name
        assert detect_server(stub.base_url) == name
        assert stub.model_probes == 1


def test_no_base_url_is_openai_without_a_probe_and_an_unknown_server_falls_back() -> None:
    assert detect_server(None) == "openai"
    with StubOpenAI() as stub:  # /v1/models answers 404
        assert detect_server(stub.base_url) == "openai"
    assert guess_from_models(["not", "a", "dict"]) is None


def _model(stub: StubOpenAI, **agent):
    settings = agent_settings(agent=agent)
    return create_chat_model("openai:smol", settings=settings, base_url=stub.base_url, environ={})


def _call_step() -> dict:
    return {"content": "", "tool_calls": [{"name": "write_file", "id": "c1",
                                           "args": {"path": 'calc.py"', "text": "a < b & c"}}]}


def test_llamacpp_profile_gets_a_streamed_tool_call_round_trip_through_every_quirk() -> None:
    with StubOpenAI([_call_step(), {"content": "done"}], quirks=QUIRKS, models=LLAMA_SERVER_MODELS) as stub:
        model = _model(stub, server="auto").bind_tools([write_file])
        acc = None
        for chunk in model.stream([HumanMessage("write calc.py")]):
            acc = chunk if acc is None else acc + chunk
        assert acc is not None and acc.tool_calls, "tools ignored or empty stream"
        assert acc.tool_calls[0]["args"] == {"path": 'calc.py"', "text": "a < b & c"}  # unescaped
        first = stub.requests[0]
        assert first["tool_choice"] == "auto" and not first.get("stream")
        history = [HumanMessage("write calc.py"), AIMessage(content="", tool_calls=acc.tool_calls),
                   ToolMessage("ok", tool_call_id="c1")]
        assert model.invoke(history).content == "done"  # no 500 for a null content
        assert stub.requests[1]["messages"][1]["content"] == ""


def test_the_openai_profile_against_the_same_server_shows_each_quirk() -> None:
    """The quirk modes are real: without the profile the same calls go wrong."""
    with StubOpenAI([_call_step(), _call_step()], quirks=QUIRKS) as stub:
        model = _model(stub, server="openai").bind_tools([write_file])
        with pytest.raises(ValueError, match="No generation chunks"):  # the empty 200
            list(model.stream([HumanMessage("write calc.py")]))
        assert not model.invoke([HumanMessage("write calc.py")]).tool_calls  # tools ignored
    with StubOpenAI([_call_step()], quirks={"html_escape"}) as stub:
        reply = _model(stub, server="openai").bind_tools([write_file]).invoke([HumanMessage("go")])
        assert reply.tool_calls[0]["args"]["path"] == "calc.py&quot;"
    with StubOpenAI([{"content": "x"}], quirks={"null_content_500"}) as stub:
        calls = [{"name": "write_file", "args": {}, "id": "c1"}]
        with pytest.raises(Exception, match="500|content must be a string"):
            _model(stub, server="openai").invoke([HumanMessage("a"), AIMessage(content="", tool_calls=calls),
                                                  ToolMessage("ok", tool_call_id="c1")])


def test_every_call_bounds_its_output_in_the_field_the_server_reads() -> None:
    with StubOpenAI([{"content": "a"}, {"content": "b"}]) as stub:
        _model(stub, server="openai").invoke("hi")
        _model(stub, server="vllm", max_output_tokens=123).invoke("hi")
        assert stub.requests[0]["max_completion_tokens"] > 0 and "max_tokens" not in stub.requests[0]
        assert stub.requests[1]["max_tokens"] == 123
    small = agent_settings(context={"token_limit": 2048, "summary_reserved_tokens": 200,
                                    "autocompact_buffer_tokens": 100, "compression_preserve_min_tokens": 100,
                                    "compression_preserve_max_tokens": 300})
    assert max_output_tokens(small, "openai:smol") == 256
    assert max_output_tokens(agent_settings(), "openai:gpt-4o") == 8192


def test_model_options_reach_the_request_and_win() -> None:
    options = {"smol": {"tool_choice": "required", "temperature": 0.1, "max_tokens": 77}}
    with StubOpenAI([_call_step()]) as stub:
        _model(stub, server="llamacpp", model_options=options).bind_tools([write_file]).invoke("hi")
        body = stub.requests[0]
    assert body["tool_choice"] == "required" and body["temperature"] == 0.1 and body["max_tokens"] == 77


def test_a_rambling_stream_ends_at_the_total_deadline() -> None:
    with StubOpenAI([{"ramble": 0.05}]) as stub:
        model = _model(stub, server="openai", request_timeout_seconds=1.0)
        start = time.monotonic()
        with pytest.raises(Exception) as info:
            for _ in model.stream("tell me everything"):
                pass
        assert time.monotonic() - start < 3.0
    assert classify(info.value) is ErrorKind.DEADLINE  # not retried: it would ramble again
    message = str(to_model_error(info.value, ErrorKind.DEADLINE, model="smol", attempts=1))
    assert "request_timeout_seconds" in message and "max_output_tokens" in message


def test_server_only_model_options_travel_in_the_body_not_as_client_arguments() -> None:
    """Seen live (tests/live): ``ignore_eos`` for llama-server raised TypeError in the OpenAI client."""
    options = {"smol": {"ignore_eos": True, "top_k": 5, "temperature": 0.3}}
    with StubOpenAI([{"content": "a"}, {"content": "b"}]) as stub:
        model = _model(stub, server="llamacpp", model_options=options)
        model.invoke("hi")
        list(model.stream("hi"))
        for body in stub.requests:
            assert body["ignore_eos"] is True and body["top_k"] == 5 and body["temperature"] == 0.3
