"""Chat models from a ``provider:name`` string, and the context window each one has.

``--model openai:gpt-4o-mini`` goes through :func:`langchain.chat_models.init_chat_model`.
OpenAI-compatible servers (vLLM, Ollama, DeepSeek, llama.cpp) are reached with ``ChatOpenAI``
and a ``base_url``, so only ``langchain-openai`` is needed for all of them; Anthropic is an
optional extra. The client's own retries are switched off: :mod:`mtagent.context.model_errors`
retries with the session's settings, so a 400 context-length error reaches the engine at once.

The context window comes from :data:`MODEL_WINDOWS` (longest matching prefix), overridden by
what a local server reports it runs with (:func:`~mtagent.agent.server_profiles.server_window`),
by ``agent.model_windows`` and, strongest, by an explicitly set ``context.token_limit``;
:func:`window_choice` also says which of them it was.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel

from mtagent.config import MAX_OUTPUT_CAP_TOKENS, MAX_OUTPUT_FLOOR_TOKENS, MAX_OUTPUT_WINDOW_SHARE, Settings
from mtagent.errors import ConfigError, ModelConfigError, ModelError

# Context windows (tokens) of well-known models, matched by the longest prefix of the
# lower-cased model name. Unknown models fall back to ``context.token_limit``.
MODEL_WINDOWS: dict[str, int] = {
    "gpt-5": 400_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "claude-": 200_000,
    "deepseek-chat": 65_536,
    "deepseek-reasoner": 65_536,
    "deepseek-coder": 131_072,
    "qwen2.5-coder": 32_768,
    "qwen3": 40_960,
    "llama3.1": 131_072,
    "llama3.2": 131_072,
    "mistral-large": 131_072,
}

# Providers spoken to through the OpenAI-compatible API when no native package is used.
# name → (default base URL or None when the user must give one, env var holding the key)
OPENAI_COMPATIBLE: dict[str, tuple[str | None, str | None]] = {
    "openai": (None, "OPENAI_API_KEY"),
    "ollama": ("http://localhost:11434/v1", None),
    "vllm": ("http://localhost:8000/v1", None),
    "llamacpp": ("http://localhost:8080/v1", None),
    "deepseek": ("https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
}
# Local servers accept any key; the OpenAI client insists on having one.
_PLACEHOLDER_KEY = "not-needed"


@dataclass(slots=True, frozen=True)
class ModelSpec:
    """A parsed ``provider:name``; ``provider`` is never empty after :func:`parse_model_spec`."""

    provider: str
    name: str

    def __str__(self) -> str:
        return f"{self.provider}:{self.name}"


def parse_model_spec(spec: str, *, base_url: str | None = None) -> ModelSpec:
    """Split ``provider:name`` on the first colon (Ollama names carry their own: ``qwen2.5:7b``).

    A bare name is inferred: ``claude-*`` → anthropic, anything else → openai (with a
    ``base_url`` that means "the OpenAI-compatible server at that URL").
    """
    spec = spec.strip()
    if not spec:
        raise ConfigError("empty model name; use provider:name, e.g. --model openai:gpt-4o-mini")
    provider, sep, name = spec.partition(":")
    known = provider.lower() in OPENAI_COMPATIBLE or provider.lower() == "anthropic"
    if sep and known:
        if not name:
            raise ConfigError(f"model {spec!r} has no name after the provider; e.g. {provider}:gpt-4o-mini")
        return ModelSpec(provider.lower(), name)
    if sep and not known and base_url is None and "/" not in provider:
        raise ConfigError(
            f"unknown model provider {provider!r} in {spec!r}; use one of "
            f"{', '.join([*OPENAI_COMPATIBLE, 'anthropic'])}, or give --base-url for an "
            "OpenAI-compatible server"
        )
    if spec.lower().startswith("claude"):
        return ModelSpec("anthropic", spec)
    return ModelSpec("openai", spec)


def _window_key(name: str) -> str:
    return name.lower().rsplit("/", 1)[-1]


def table_window(model_name: str) -> int | None:
    """The window of ``model_name`` from :data:`MODEL_WINDOWS`, or None if it is not listed."""
    key = _window_key(model_name)
    best: tuple[int, int] | None = None
    for prefix, window in MODEL_WINDOWS.items():
        if key.startswith(prefix) and (best is None or len(prefix) > best[0]):
            best = (len(prefix), window)
    return best[1] if best else None


@dataclass(slots=True, frozen=True)
class WindowChoice:
    """The window the engine plans for, where it came from, and what the server said that was refused."""

    tokens: int
    source: str
    warnings: tuple[str, ...] = ()


def window_choice(settings: Settings, model: str | None, *, server: str | None = None,
                  base_url: str | None = None) -> WindowChoice:
    """Explicit ``context.token_limit`` > ``agent.model_windows`` > the server's report > table > default.

    The server (``server`` profile at ``base_url``) is asked only when the user set no window.
    """
    ctx = settings.context
    if "token_limit" in ctx.model_fields_set:
        return WindowChoice(ctx.token_limit, "context.token_limit (set)")
    if not model:
        return WindowChoice(ctx.token_limit, "context.token_limit (default)")
    name = model.partition(":")[2] if ":" in model else model
    overrides = settings.agent.model_windows
    for key in (model, name, _window_key(name)):
        if key in overrides:
            return WindowChoice(overrides[key], f"agent.model_windows[{key!r}]")
    warnings: tuple[str, ...] = ()
    if server and base_url:
        from mtagent.agent.server_profiles import server_window

        reported = server_window(server, base_url, name)
        if reported.tokens is not None:
            return WindowChoice(reported.tokens, f"the server ({reported.source})", reported.warnings)
        warnings = reported.warnings
    if (known := table_window(name)) is not None:
        return WindowChoice(known, "mtagent's table of known models", warnings)
    return WindowChoice(ctx.token_limit, "context.token_limit (default)", warnings)


def context_window(settings: Settings, model: str | None) -> int:
    """The window the engine plans for, without asking a server (see :func:`window_choice`)."""
    return window_choice(settings, model).tokens


def model_window(settings: Settings, model_name: str, model: Any) -> WindowChoice:
    """:func:`window_choice` for a built chat model: a profiled OpenAI-compatible one asks its server."""
    profile = getattr(model, "server_profile", None)
    base_url = getattr(model, "openai_api_base", None)
    server = getattr(profile, "name", None)
    return window_choice(settings, model_name, server=server if isinstance(server, str) else None,
                         base_url=base_url if isinstance(base_url, str) else None)


def max_output_tokens(settings: Settings, model: str | None, window: int | None = None) -> int:
    """Output tokens asked for on every call: ``agent.max_output_tokens``, else a share of the window."""
    if settings.agent.max_output_tokens:
        return settings.agent.max_output_tokens
    share = (window or context_window(settings, model)) // MAX_OUTPUT_WINDOW_SHARE
    return max(MAX_OUTPUT_FLOOR_TOKENS, min(MAX_OUTPUT_CAP_TOKENS, share))


def model_options(settings: Settings, model: str) -> dict[str, Any]:
    """``agent.model_options`` for ``model`` (matched as provider:name, name, or last path part)."""
    name = model.partition(":")[2] if ":" in model else model
    for key in (model, name, _window_key(name)):
        if key in settings.agent.model_options:
            return dict(settings.agent.model_options[key])
    return {}


def create_chat_model(
    spec: str,
    *,
    settings: Settings,
    base_url: str | None = None,
    api_key: str | None = None,
    environ: dict[str, str] | None = None,
    **extra: Any,
) -> BaseChatModel:
    """A LangChain chat model for ``spec`` (``provider:name``), ready to ``bind_tools``.

    ``base_url`` (or ``agent.base_url``) points the OpenAI client at a compatible server.
    Keys come from ``api_key`` or the provider's usual environment variable; they go into the
    client's auth header only — never into a message, the transcript, or an error text.
    """
    env = dict(os.environ if environ is None else environ)
    base_url = base_url or settings.agent.base_url
    parsed = parse_model_spec(spec, base_url=base_url)
    timeout = settings.agent.request_timeout_seconds
    if parsed.provider == "anthropic":
        extra.setdefault("max_tokens", max_output_tokens(settings, spec))
        return _anthropic(parsed, api_key=api_key, timeout=timeout, env=env, **extra)

    default_url, key_env = OPENAI_COMPATIBLE[parsed.provider]
    url = base_url or default_url
    key = api_key or (env.get(key_env) if key_env else None)
    if not key and url is not None:
        key = env.get("OPENAI_API_KEY") or _PLACEHOLDER_KEY
    if not key:
        raise ModelConfigError(
            f"no API key for {parsed}: set {key_env} in the environment, or pass --base-url "
            "for a local OpenAI-compatible server (Ollama, vLLM, llama.cpp)"
        )
    from mtagent.agent.deadline import deadline_clients
    from mtagent.agent.profiled_openai import ProfiledChatOpenAI
    from mtagent.agent.server_profiles import resolve_profile

    sync_client, async_client = deadline_clients(timeout)
    profile = resolve_profile(settings.agent.server, url)
    window = window_choice(settings, spec, server=profile.name, base_url=url).tokens  # the server's, if it says
    kwargs: dict[str, Any] = {
        "api_key": key,
        "timeout": timeout,
        "max_retries": 0,
        "stream_usage": True,
        "http_client": sync_client,
        "http_async_client": async_client,
        "server_profile": profile,
        "output_tokens": max_output_tokens(settings, spec, window),
        "request_options": model_options(settings, spec),
    }
    if url:
        kwargs["base_url"] = url
    kwargs.update(extra)
    return ProfiledChatOpenAI(model=parsed.name, **kwargs)


def _anthropic(parsed: ModelSpec, *, api_key: str | None, timeout: float,
               env: dict[str, str], **extra: Any) -> BaseChatModel:
    if importlib.util.find_spec("langchain_anthropic") is None:
        raise ModelError(
            f"{parsed} needs the Anthropic extra: pip install 'mtagent[anthropic]' "
            "(or pip install langchain-anthropic)"
        )
    key = api_key or env.get("ANTHROPIC_API_KEY")
    if not key:
        raise ModelConfigError(f"no API key for {parsed}: set ANTHROPIC_API_KEY in the environment")
    from mtagent.agent.prompt_cache import caching_anthropic_model

    # Cache breakpoints on system + tools and the newest messages (agent/prompt_cache.py).
    return caching_anthropic_model(parsed.name, api_key=key, timeout=timeout, max_retries=0, **extra)
