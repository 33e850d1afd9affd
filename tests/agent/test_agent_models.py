"""Model specs, the per-model window table and its overrides, and the model factory."""

from __future__ import annotations

import importlib.util

import pytest

from mtagent.agent.models import context_window, create_chat_model, parse_model_spec, table_window
from mtagent.config import Settings, load_settings
from mtagent.errors import ConfigError, ModelError


def test_parse_model_spec_splits_on_first_colon_only():
    spec = parse_model_spec("ollama:qwen2.5-coder:7b")
    assert (spec.provider, spec.name) == ("ollama", "qwen2.5-coder:7b")


def test_parse_model_spec_infers_provider_from_bare_names():
    assert parse_model_spec("gpt-4o-mini").provider == "openai"
    assert parse_model_spec("claude-sonnet-4-5").provider == "anthropic"


def test_unknown_provider_without_base_url_is_a_config_error():
    with pytest.raises(ConfigError, match="unknown model provider 'foo'"):
        parse_model_spec("foo:bar")


def test_table_window_uses_longest_prefix():
    assert table_window("gpt-4o-mini") == 128_000
    assert table_window("gpt-4.1-mini") == 1_047_576
    assert table_window("gpt-4") == 8_192
    assert table_window("o4-mini") == 200_000
    assert table_window("claude-3-5-sonnet-latest") == 200_000
    assert table_window("org/some-unknown-model") is None


def test_context_window_precedence_explicit_limit_then_overrides_then_table():
    assert context_window(Settings(), "openai:gpt-4o") == 128_000
    assert context_window(Settings(), "openai:totally-unknown") == Settings().context.token_limit
    overridden = load_settings(overrides={"agent": {"model_windows": {"gpt-4o": 64_000}}})
    assert context_window(overridden, "openai:gpt-4o") == 64_000
    explicit = load_settings(overrides={"context": {"token_limit": 16_384},
                                        "agent": {"model_windows": {"gpt-4o": 64_000}}})
    assert context_window(explicit, "openai:gpt-4o") == 16_384


def test_create_openai_compatible_model_points_at_base_url_without_client_retries():
    model = create_chat_model("ollama:llama3.1:8b", settings=Settings(), environ={})
    assert model.model_name == "llama3.1:8b"
    assert str(model.openai_api_base).startswith("http://localhost:11434/v1")
    assert model.max_retries == 0
    custom = create_chat_model("openai:my-model", settings=Settings(), base_url="http://127.0.0.1:9/v1",
                               environ={})
    assert str(custom.openai_api_base) == "http://127.0.0.1:9/v1"


def test_openai_without_key_is_one_clear_model_error():
    with pytest.raises(ModelError, match="set OPENAI_API_KEY"):
        create_chat_model("openai:gpt-4o-mini", settings=Settings(), environ={})


@pytest.mark.skipif(importlib.util.find_spec("langchain_anthropic") is not None,
                    reason="langchain-anthropic is installed here")
def test_anthropic_without_the_extra_says_how_to_install_it():
    with pytest.raises(ModelError, match=r"mtagent\[anthropic\]"):
        create_chat_model("anthropic:claude-sonnet-4-5", settings=Settings(), environ={"ANTHROPIC_API_KEY": "x"})
