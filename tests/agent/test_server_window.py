"""The window a local server reports (llama.cpp /props, vLLM max_model_len, Ollama /api/show), used
when the user set none, with its source; hostile answers are ignored with a warning."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_helpers import agent_settings, make_project
from stub_openai import StubOpenAI

from mtagent.agent.models import create_chat_model, window_choice
from mtagent.agent.server_profiles import checked_window, forget_probes, server_window
from mtagent.agent.session import AgentSession

LLAMA_MODELS = {"models": [{"name": "smol", "model": "smol"}], "object": "list",
                "data": [{"id": "smol", "object": "model", "owned_by": "llamacpp", "meta": {"n_ctx_train": 8192}}]}
VLLM_MODELS = {"object": "list", "data": [
    {"id": "other", "object": "model", "owned_by": "vllm", "max_model_len": 32768},
    {"id": "smol", "object": "model", "owned_by": "vllm", "max_model_len": 4096}]}
OLLAMA_MODELS = {"object": "list", "data": [{"id": "smol:latest", "object": "model", "owned_by": "library"}]}


def _session(tmp_path: Path, stub: StubOpenAI, spec: str = "openai:smol", **sections) -> AgentSession:
    settings = agent_settings(**sections)
    return AgentSession.create(make_project(tmp_path), model=spec, settings=settings, base_url=stub.base_url,
                               environ={}, approval="never")


def test_llamacpp_props_n_ctx_is_the_window_and_its_source_is_said(tmp_path: Path) -> None:
    props = {"default_generation_settings": {"n_ctx": 2048, "n_predict": -1}, "total_slots": 1}
    with StubOpenAI(models=LLAMA_MODELS, props=props) as stub, _session(tmp_path, stub) as session:
        assert session.window == 2048  # the running context, not the model's n_ctx_train (8192)
        assert session.window_source == "the server (llama.cpp /props default_generation_settings.n_ctx)"
        assert session.threshold < 2048 and not session.window_warnings
        assert "/props" in stub.probes
        model = create_chat_model("openai:smol", settings=agent_settings(), base_url=stub.base_url, environ={})
        assert model.output_tokens == 256  # the output bound follows the server's window too (2048 // 8 → floor)


@pytest.mark.parametrize(("models", "window", "source"), [
    (LLAMA_MODELS, 8192, "llama.cpp /v1/models meta.n_ctx_train"),  # llama.cpp without /props: the models' meta
    (VLLM_MODELS, 4096, "vLLM /v1/models max_model_len"),  # vLLM: max_model_len of the model asked for
], ids=["llamacpp-without-props", "vllm-max-model-len"])
def test_the_window_from_the_models_answer(tmp_path: Path, models: dict, window: int, source: str) -> None:
    with StubOpenAI(models=models) as stub, _session(tmp_path, stub) as session:
        assert session.window == window
        assert session.window_source == f"the server ({source})"


def test_ollama_num_ctx_wins_over_the_trained_context_length(tmp_path: Path) -> None:
    show = {"parameters": "temperature 0.2\nnum_ctx 6144\n",
            "model_info": {"general.architecture": "llama", "llama.context_length": 131072}}
    with StubOpenAI(models=OLLAMA_MODELS, show=show) as stub, \
            _session(tmp_path, stub, "ollama:smol:latest") as session:
        assert session.window == 6144
        assert session.window_source == "the server (Ollama /api/show parameters num_ctx)"
    forget_probes()
    show = {"model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768}}
    with StubOpenAI(models=OLLAMA_MODELS, show=show) as stub:
        settings = agent_settings()
        chosen = window_choice(settings, "ollama:smol:latest", server="ollama", base_url=stub.base_url)
        assert (chosen.tokens, chosen.source) == (32768, "the server (Ollama /api/show model_info.qwen2.context_length)")


def test_a_window_the_user_set_wins_and_the_server_is_not_asked(tmp_path: Path) -> None:
    props = {"default_generation_settings": {"n_ctx": 2048}}
    with StubOpenAI(models=LLAMA_MODELS, props=props) as stub:
        with _session(tmp_path / "a", stub, context={"token_limit": 16384}) as session:
            assert (session.window, session.window_source) == (16384, "context.token_limit (set)")
        with _session(tmp_path / "b", stub, agent={"model_windows": {"smol": 12000}}) as session:
            assert (session.window, session.window_source) == (12000, "agent.model_windows['smol']")
        assert "/props" not in stub.probes


HOSTILE = [
    (-4096, "outside"), (10**12, "outside"), (0, "outside"), ("4096", "not a whole number"),
    (4096.5, "not a whole number"), (True, "not a whole number"), (None, "not a whole number"),
    ({"n": 1}, "not a whole number"),
]


@pytest.mark.parametrize(("value", "why"), HOSTILE)
def test_hostile_props_values_are_ignored_with_a_warning(tmp_path: Path, value, why) -> None:
    props = {"default_generation_settings": {"n_ctx": value}}
    models = {"object": "list", "data": [{"id": "smol", "object": "model", "owned_by": "llamacpp"}]}
    with StubOpenAI(models=models, props=props) as stub, _session(tmp_path, stub) as session:
        assert session.window == 131072 and session.window_source == "context.token_limit (default)"
        assert len(session.window_warnings) == 1
        assert why in session.window_warnings[0] and "ignored" in session.window_warnings[0]


def test_an_html_page_instead_of_json_is_ignored_with_a_warning_that_quotes_it_safely(tmp_path: Path) -> None:
    page = "<html>\x1b[31m<body>Sign in to the proxy</body></html>" + "x" * 5000
    with StubOpenAI(models=LLAMA_MODELS, props=page) as stub, _session(tmp_path, stub) as session:
        assert session.window == 8192  # /props was refused; the models answer still counts
        (warning,) = session.window_warnings
        assert "something other than JSON" in warning and "<html>" in warning
        assert "\x1b" not in warning and len(warning) < 300


def test_a_hostile_ollama_num_ctx_and_a_huge_number_string_are_refused(tmp_path: Path) -> None:
    show = {"parameters": "num_ctx " + "9" * 5000, "model_info": {"llama.context_length": -1}}
    with StubOpenAI(models=OLLAMA_MODELS, show=show) as stub:
        chosen = server_window("ollama", stub.base_url, "smol:latest")
        assert chosen.tokens is None and len(chosen.warnings) == 2


def test_checked_window_bounds() -> None:
    assert checked_window(256, "x") == (256, None)
    assert checked_window(100_000_000, "x") == (100_000_000, None)
    assert checked_window(255, "x")[0] is None and checked_window(100_000_001, "x")[0] is None


def test_a_server_that_says_nothing_leaves_the_table_and_the_default(tmp_path: Path) -> None:
    # 404 everywhere: an unknown server, nothing probed for a window
    with StubOpenAI() as stub, _session(tmp_path, stub, "openai:qwen2.5-coder-7b") as session:
        assert (session.window, session.window_source) == (32768, "mtagent's table of known models")
        assert not session.window_warnings
