"""What each OpenAI-compatible server needs in a request, and which server is behind a base URL.

Servers that speak "the OpenAI API" differ in ways that break an agent silently: llama-cpp-python
ignores ``tools`` unless ``tool_choice`` is sent, returns an empty reply for a streamed request
with tools, answers 500 to an assistant turn whose ``content`` is null and HTML-escapes text
inside tool arguments. A :class:`ServerProfile` names those quirks once; ``agent.server`` picks
one, and ``auto`` asks the server's ``/v1/models`` (the ``owned_by`` field and the extra fields
each server adds), falling back to its well-known port. The probe runs once per base URL per
process and never when there is no base URL (that is OpenAI itself).
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse


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
    url = base_url.rstrip("/") + "/models"
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT_SECONDS) as response:  # noqa: S310 - user URL
            return json.loads(response.read(1_000_000) or b"null")
    except urllib.error.HTTPError as exc:  # the error body can name the server too
        try:
            return json.loads(exc.read(100_000) or b"null")
        except ValueError:
            return None
    except (OSError, ValueError):
        return None


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
