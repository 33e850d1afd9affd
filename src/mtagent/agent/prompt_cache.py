"""Anthropic prompt-cache breakpoints: system + tools, and the newest messages.

Anthropic caches a prompt prefix only up to a ``cache_control`` breakpoint. The engine keeps every
request a byte-identical extension of the previous one (and a compaction's summary request is the
last main request + one instruction, see ``context/compaction/cache_align.py``), so three
breakpoints are enough for every call to read the conversation from the cache:

* the end of the system prompt — it covers the tool definitions too (Anthropic orders a prompt
  tools → system → messages); the last tool when there is no system prompt;
* the newest message — this call writes its whole prefix to the cache;
* the message before it — the previous call's breakpoint, so this call's lookup hits exactly
  what the previous call wrote (and a summary request, whose newest message is the appended
  instruction, hits the main request it extends).

Anthropic allows four breakpoints per request; breakpoints a caller already set are counted and
never exceeded. OpenAI-style providers cache prefixes automatically and need none of this.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
MAX_BREAKPOINTS = 4
# Blocks Anthropic refuses a breakpoint on.
_NO_BREAKPOINT = frozenset({"thinking", "redacted_thinking"})


def _count(value: Any) -> int:
    if isinstance(value, dict):
        return int("cache_control" in value) + sum(_count(v) for v in value.values())
    if isinstance(value, list):
        return sum(_count(v) for v in value)
    return 0


def _mark_last_block(holder: dict[str, Any], key: str) -> bool:
    """Put a breakpoint on the last eligible block of ``holder[key]`` (a string becomes a block)."""
    content = holder.get(key)
    if isinstance(content, str):
        if not content:
            return False
        holder[key] = [{"type": "text", "text": content, "cache_control": dict(EPHEMERAL)}]
        return True
    if isinstance(content, list):
        for block in reversed(content):
            if isinstance(block, dict) and block.get("type") not in _NO_BREAKPOINT:
                if "cache_control" not in block:
                    block["cache_control"] = dict(EPHEMERAL)
                return True
    return False


def add_cache_breakpoints(payload: dict[str, Any]) -> dict[str, Any]:
    """Mark ``payload`` (an Anthropic Messages API request body) in place; returns it."""
    budget = MAX_BREAKPOINTS - _count(payload.get("system")) - _count(payload.get("tools")) - _count(
        payload.get("messages")
    )
    if budget <= 0:
        return payload
    marked = False
    if payload.get("system"):
        marked = _mark_last_block(payload, "system")
    if not marked and isinstance(payload.get("tools"), list) and payload["tools"]:
        last = payload["tools"][-1]
        if isinstance(last, dict) and "cache_control" not in last:
            last["cache_control"] = dict(EPHEMERAL)
            marked = True
    budget -= int(marked)
    messages = payload.get("messages")
    if isinstance(messages, list):
        for message in reversed(messages[-2:]):
            if budget <= 0:
                break
            if isinstance(message, dict) and _mark_last_block(message, "content"):
                budget -= 1
    return payload


@lru_cache(maxsize=1)
def _caching_class() -> type:
    from langchain_anthropic import ChatAnthropic

    class CachingChatAnthropic(ChatAnthropic):
        """ChatAnthropic + :func:`add_cache_breakpoints` on each request body."""

        def _get_request_payload(self, input_: Any, *, stop: list[str] | None = None, **kw: Any) -> dict:
            return add_cache_breakpoints(super()._get_request_payload(input_, stop=stop, **kw))

    return CachingChatAnthropic


def caching_anthropic_model(name: str, **kwargs: Any) -> Any:
    """A ``ChatAnthropic`` for ``name`` whose every request carries the breakpoints above
    (langchain-anthropic is imported only here: it is an optional extra)."""
    return _caching_class()(model=name, **kwargs)
