"""Real provider error bodies (tests/data/provider_errors/corpus.json), served by the stub and
raised by the real OpenAI client, land in the class that decides what happens next: context
overflow → reactive compact, permanent → one clear message without retry, transient → retries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_openai import ChatOpenAI

from mtagent.context.model_errors import ErrorKind, RetryPolicy, call_with_retries, classify, to_model_error
from stub_openai import StubOpenAI

CORPUS = json.loads((Path(__file__).parents[1] / "data" / "provider_errors" / "corpus.json").read_text())["cases"]


def _raise(step: dict) -> BaseException:
    with StubOpenAI([step]) as stub:
        client = ChatOpenAI(model="m", base_url=stub.base_url, api_key="k", max_retries=0, timeout=5)
        with pytest.raises(Exception) as info:
            client.invoke("hello")
    return info.value


def _step(case: dict) -> dict:
    return {"error": case["status"], "type": case["type"], "code": case["code"], "message": case["message"]}


def test_corpus_covers_every_provider_and_class() -> None:
    providers = {c["provider"] for c in CORPUS}
    assert {"openai", "anthropic", "vllm", "llamacpp", "ollama", "lmstudio", "deepseek"} <= providers
    assert {c["kind"] for c in CORPUS} >= {"context_length", "permanent", "server", "rate_limit"}


@pytest.mark.parametrize("case", CORPUS, ids=lambda c: f"{c['provider']}-{c['status']}-{c['message'][:30]}")
def test_corpus_error_is_classified(case: dict) -> None:
    kind = classify(_raise(_step(case)))
    assert kind.value == case["kind"], case["message"]


def test_jinja_500_is_not_retried_and_says_what_to_do() -> None:
    case = next(c for c in CORPUS if "jinja" in c["message"])
    calls = []

    def call() -> None:
        calls.append(1)
        raise _raise(_step(case))

    with pytest.raises(Exception) as info:
        call_with_retries(call, RetryPolicy(max_retries=3, base_seconds=0), sleep=lambda s: None)
    assert len(calls) == 1
    message = str(to_model_error(info.value, classify(info.value), model="llamacpp:smol", attempts=1))
    assert "--jinja" in message and "retrying will not help" in message
    assert "raise agent.max_retries" not in message


def test_transient_errors_are_retried_with_jitter_and_bounded() -> None:
    case = next(c for c in CORPUS if c["message"] == "Loading model")
    waits: list[float] = []
    with StubOpenAI([_step(case)] * 3) as stub:
        client = ChatOpenAI(model="m", base_url=stub.base_url, api_key="k", max_retries=0, timeout=5)
        with pytest.raises(Exception):
            call_with_retries(lambda: client.invoke("hi"), RetryPolicy(max_retries=2, base_seconds=1.0),
                              sleep=waits.append)
        assert len(stub.requests) == 3
    assert len(waits) == 2 and waits[0] != 1.0 and 0.75 <= waits[0] <= 1.25


def test_llamacpp_overflow_gap_is_parsed() -> None:
    from mtagent.context.model_errors import parse_context_length_gap

    exc = _raise(_step(next(c for c in CORPUS if c["type"] == "exceed_context_size_error")))
    assert classify(exc) is ErrorKind.CONTEXT_LENGTH
    assert parse_context_length_gap(exc) == 2769 - 2048


def test_llamacpp_overflow_runs_a_reactive_compact_in_the_agent(project) -> None:
    """llama-server's exceed_context_size_error makes the agent compact and retry, not exit."""
    from agent_helpers import agent_settings
    from mtagent.agent.models import create_chat_model
    from mtagent.agent.session import AgentSession
    from mtagent.session.reader import read_records

    overflow = _step(next(c for c in CORPUS if c["type"] == "exceed_context_size_error"))
    state = {"turn": 0, "injected": False}

    def responder(body: dict) -> dict:
        if body["messages"][-1]["role"] == "user":
            state["turn"] += 1
            if state["turn"] == 4 and not state["injected"]:
                state["injected"] = True
                state["turn"] -= 1
                return overflow
            return {"content": f"turn {state['turn']} done. " + "report words " * 300}
        return {"content": "ok"}

    settings = agent_settings(context={"token_limit": 12_000, "summary_reserved_tokens": 2_000,
                                       "autocompact_buffer_tokens": 1_000, "compression_preserve_min_tokens": 1_500,
                                       "compression_preserve_max_tokens": 3_000},
                              agent={"compact_model": "extractive"})
    with StubOpenAI(responder=responder) as stub:
        model = create_chat_model("openai:m", settings=settings, base_url=stub.base_url, environ={})
        with AgentSession.create(project, model=model, settings=settings) as session:
            for i in range(1, 5):
                assert session.run_turn(f"step {i}").status == "done"
            path = session.transcript_path
    assert state["injected"]
    assert any(r["type"] == "compact_boundary" and r["trigger"] == "reactive" for r in read_records(path))
