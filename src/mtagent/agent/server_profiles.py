"""What each OpenAI-compatible server needs in a request, and which server is behind a base URL.

Servers that speak "the OpenAI API" differ in ways that break an agent silently: llama-cpp-python
ignores ``tools`` unless ``tool_choice`` is sent, returns an empty reply for a streamed request
with tools, answers 500 to an assistant turn whose ``content`` is null and HTML-escapes text
inside tool arguments. A :class:`ServerProfile` names those quirks once; ``agent.server`` picks
one, and ``auto`` asks the server's ``/v1/models`` (the ``owned_by`` field and the extra fields
each server adds), falling back to its well-known port. The probe runs once per base URL per
process and never when there is no base URL (that is OpenAI itself).

:func:`server_window` asks the same server for the context window it runs with (llama.cpp
``/props``, vLLM's ``max_model_len``, Ollama's ``/api/show``), used when the user set none. What
a server says is untrusted: anything but a whole number within bounds is ignored with a warning.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from mtagent.config_sections import SERVER_WINDOW_MAX, SERVER_WINDOW_MIN


@dataclass(slots=True, frozen=True)
class ServerProfile:
    """The request options one server family needs (docs/servers.md has the table)."""

    name: str
    tool_choice: str | None = None  # sent when tools are bound and the caller chose none
    stream_with_tools: bool = True  # False: a call with tools is made unstreamed
    empty_content_for_tool_calls: bool = False  # assistant tool-call turns carry "" instead of null
    unescape_tool_args: bool = False  # html.unescape the strings inside tool arguments
    max_tokens_field: str = "max_tokens"  # the field that bounds the output


PROFILES: dict[str, ServerProfile] = {
    "openai": ServerProfile("openai", max_tokens_field="max_completion_tokens"),
    "vllm": ServerProfile("vllm"),
    "ollama": ServerProfile("ollama"),
    "llamacpp": ServerProfile("llamacpp", tool_choice="auto", stream_with_tools=False,
                              empty_content_for_tool_calls=True, unescape_tool_args=True),
    "lmstudio": ServerProfile("lmstudio", empty_content_for_tool_calls=True),
}

# The port each server listens on by default: the guess when /v1/models says nothing useful.
_DEFAULT_PORTS = {11434: "ollama", 1234: "lmstudio", 8080: "llamacpp"}
# owned_by values seen in /v1/models answers (llama-cpp-python answers "me").
_OWNERS = {"llamacpp": "llamacpp", "me": "llamacpp", "vllm": "vllm", "library": "ollama", "ollama": "ollama",
           "organization_owner": "lmstudio", "openai": "openai", "system": "openai", "openai-internal": "openai"}
PROBE_TIMEOUT_SECONDS = 3.0

_cache: dict[str, str] = {}
_answers: dict[str, Any] = {}  # base URL → its /v1/models answer (the window reads it too)
_windows: dict[tuple[str, str, str], ServerWindow] = {}
_cache_lock = threading.Lock()


def guess_from_models(answer: Any) -> str | None:
    """The server family from a ``/v1/models`` JSON answer, or None when it does not say."""
    if not isinstance(answer, dict):
        return None
    if "models" in answer and isinstance(answer.get("data"), list):
        return "llamacpp"  # llama-server adds its own "models" list beside OpenAI's "data"
    for entry in answer.get("data") or []:
        if not isinstance(entry, dict):
            continue
        if "max_model_len" in entry:
            return "vllm"
        if isinstance(entry.get("meta"), dict) and "n_ctx_train" in entry["meta"]:
            return "llamacpp"
        owner = str(entry.get("owned_by", "")).lower()
        if owner in _OWNERS:
            return _OWNERS[owner]
    return None


def _fetch_models(base_url: str) -> Any:
    with _cache_lock:
        if base_url in _answers:
            return _answers[base_url]
    url = base_url.rstrip("/") + "/models"
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    answer: Any = None
    try:
        with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT_SECONDS) as response:  # noqa: S310 - user URL
            answer = json.loads(response.read(1_000_000) or b"null")
    except urllib.error.HTTPError as exc:  # the error body can name the server too
        try:
            answer = json.loads(exc.read(100_000) or b"null")
        except ValueError:
            answer = None
    except (OSError, ValueError):
        answer = None
    with _cache_lock:
        _answers[base_url] = answer
    return answer


def detect_server(base_url: str | None) -> str:
    """The profile name for ``base_url``: asked once per URL per process; ``openai`` without a URL."""
    if not base_url:
        return "openai"
    with _cache_lock:
        if base_url in _cache:
            return _cache[base_url]
    name = guess_from_models(_fetch_models(base_url))
    if name is None:
        name = _DEFAULT_PORTS.get(urlparse(base_url).port or 0, "openai")
    with _cache_lock:
        _cache[base_url] = name
    return name


def resolve_profile(setting: str, base_url: str | None) -> ServerProfile:
    """The profile ``agent.server`` names (``auto``: detected from ``base_url``)."""
    name = detect_server(base_url) if setting == "auto" else setting
    return PROFILES[name]


def forget_probes() -> None:
    """Drop cached probes (a server restarted as another kind; tests)."""
    with _cache_lock:
        _cache.clear()
        _answers.clear()
        _windows.clear()


# ── the window a server runs with ────────────────────────────────────────────────────────


@dataclass(slots=True, frozen=True)
class ServerWindow:
    """The context window a server reported (None: it said nothing usable) and where it came from."""

    tokens: int | None
    source: str = ""
    warnings: tuple[str, ...] = ()


def _request_json(url: str, warnings: list[str], body: dict[str, Any] | None = None) -> Any:
    """The JSON answer of ``url`` (POST with ``body``); None when the server has no such endpoint,
    or (with a warning) when it answered with something else — an HTML page, a proxy's login form."""
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Accept": "application/json", **({"Content-Type": "application/json"} if data else {})}
    request = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT_SECONDS) as response:  # the user's server
            raw = response.read(2_000_000)
    except (OSError, ValueError):  # 404, refused, timed out: this server does not say
        return None
    try:
        return json.loads(raw or b"null")
    except ValueError:
        warnings.append(f"the server's window: {url} answered with something other than JSON "
                        f"({_shown(raw[:40])}); ignored")
        return None


def _shown(value: Any) -> str:
    """A server's value as a warning may quote it: short, one line, no control characters."""
    text = repr(value if not isinstance(value, bytes) else value.decode("utf-8", "replace"))
    return re.sub(r"[\x00-\x1f\x7f]", "?", text[:40] + ("…" if len(text) > 40 else ""))


def checked_window(value: Any, where: str) -> tuple[int | None, str | None]:
    """``value`` as a window in tokens, or None and why it was ignored (not a whole number, out of bounds)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None, f"{where} is not a whole number ({_shown(value)}); ignored"
    if not SERVER_WINDOW_MIN <= value <= SERVER_WINDOW_MAX:
        return None, f"{where} = {value} is outside {SERVER_WINDOW_MIN:,}–{SERVER_WINDOW_MAX:,} tokens; ignored"
    return value, None


def _root(base_url: str) -> str:
    """The server's root: llama.cpp's ``/props`` and Ollama's ``/api`` sit beside ``/v1``."""
    url = base_url.rstrip("/")
    return url.removesuffix("/v1")


def _model_entries(answer: Any, model: str) -> list[dict[str, Any]]:
    """The ``/v1/models`` entries for ``model`` (the only entry when the server serves one)."""
    entries = [e for e in (answer.get("data") or []) if isinstance(e, dict)] if isinstance(answer, dict) else []
    named = [e for e in entries if e.get("id") == model]
    return named or (entries if len(entries) == 1 else [])


def _candidates(server: str, base_url: str, model: str, warnings: list[str]) -> list[tuple[str, Any]]:
    """(where, value) pairs the server reported, best first."""
    found: list[tuple[str, Any]] = []
    if server == "llamacpp":
        props = _request_json(_root(base_url) + "/props", warnings)
        settings = props.get("default_generation_settings") if isinstance(props, dict) else None
        if isinstance(settings, dict) and "n_ctx" in settings:
            found.append(("llama.cpp /props default_generation_settings.n_ctx", settings["n_ctx"]))
        for entry in _model_entries(_fetch_models(base_url), model):
            meta = entry.get("meta") if isinstance(entry.get("meta"), dict) else {}
            for key in ("n_ctx", "n_ctx_train"):
                if key in meta:
                    found.append((f"llama.cpp /v1/models meta.{key}", meta[key]))
    elif server == "vllm":
        for entry in _model_entries(_fetch_models(base_url), model):
            if "max_model_len" in entry:
                found.append(("vLLM /v1/models max_model_len", entry["max_model_len"]))
    elif server == "ollama":
        show = _request_json(_root(base_url) + "/api/show", warnings, {"model": model})
        if isinstance(show, dict):
            params = show.get("parameters")
            match = re.search(r"^\s*num_ctx\s+(\d+)\s*$", params, re.MULTILINE) if isinstance(params, str) else None
            if match:  # more digits than any window has stay text (and are refused as such)
                digits = match.group(1)
                found.append(("Ollama /api/show parameters num_ctx", int(digits) if len(digits) <= 12 else digits))
            info = show.get("model_info") if isinstance(show.get("model_info"), dict) else {}
            for key, value in info.items():
                if str(key).endswith(".context_length"):
                    found.append((f"Ollama /api/show model_info.{key}", value))
    return found


def server_window(server: str, base_url: str | None, model: str) -> ServerWindow:
    """The window the server behind ``base_url`` runs ``model`` with; asked once per process.

    The first usable value wins (the running context before the model's trained one); values
    that are not whole numbers within bounds, and answers that are not JSON, become warnings.
    """
    if not base_url or server not in ("llamacpp", "vllm", "ollama"):
        return ServerWindow(None)
    key = (server, base_url, model)
    with _cache_lock:
        if key in _windows:
            return _windows[key]
    warnings: list[str] = []
    result = ServerWindow(None)
    for where, value in _candidates(server, base_url, model, warnings):
        tokens, problem = checked_window(value, where)
        if problem:
            warnings.append(f"the server's window: {problem}")
        elif tokens is not None:
            result = ServerWindow(tokens, where)
            break
    result = ServerWindow(result.tokens, result.source, tuple(warnings))
    with _cache_lock:
        _windows[key] = result
    return result

