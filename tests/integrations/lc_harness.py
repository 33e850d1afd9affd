"""Helpers for the middleware tests: tools with large outputs, a small-window Settings, token counts."""

from __future__ import annotations

import hashlib

from langchain_core.messages import BaseMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool

from mtagent import paths
from mtagent.config import Settings
from mtagent.context.tokens import count_text_tokens, message_text
from mtagent.session.reader import read_records

SYSTEM_PROMPT = "You are a careful coding agent. Use the tools to inspect the repository."


def _lines(seed: str, count: int, width: int = 90) -> str:
    """Deterministic, varied text (hash-chained lines) so token counts are realistic."""
    out: list[str] = []
    digest = seed.encode()
    for i in range(count):
        digest = hashlib.sha256(digest).digest()
        word = digest.hex()
        out.append(f"{seed}:{i:05d} {word} {word[:width - 80]}")
    return "\n".join(out)


@tool
def shell(command: str) -> str:
    """Run a shell command in the repository and return its output."""
    return _lines(f"shell[{command}]", 700)


@tool
def grep(pattern: str) -> str:
    """Search the repository for a pattern."""
    return "\n".join(f"src/mod_{i % 40}.py:{i}: match {pattern} {line}"
                     for i, line in enumerate(_lines(pattern, 260).splitlines()))


@tool
def read_file(path: str) -> str:
    """Read a small file."""
    return f"# {path}\n" + _lines(path, 25)


@tool
def fetch(url: str) -> str:
    """Fetch a page (about 43,000 chars: under the default 50,000 limit, so only the turn's
    200,000-char aggregate rule can persist it)."""
    return _lines(f"fetch[{url}]", 400)


TOOLS = [shell, grep, read_file, fetch]


def small_window_settings(token_limit: int = 24_000, *, size_microcompact: bool = False) -> Settings:
    """A small window so a 40-step session must compact several times (all values via Settings).

    Size-triggered microcompact would otherwise keep this session under the threshold on its own;
    it is switched off (trigger above the threshold) unless asked for.
    """
    microcompact = ({"size_trigger_fraction": 0.5} if size_microcompact
                    else {"size_trigger_fraction": 1.0, "size_target_fraction": 0.9})
    return Settings.model_validate({
        "context": {
            "token_limit": token_limit,
            "summary_reserved_tokens": 3_000,
            "autocompact_buffer_tokens": 2_000,
            "compression_preserve_min_tokens": 2_000,
            "compression_preserve_max_tokens": 6_000,
        },
        "microcompact": microcompact,
        "session_memory": {"enabled": False},
    })


def request_tokens(messages: list[BaseMessage], encoding: str = "o200k_base") -> int:
    """Exact o200k tokens of what a model was sent (text, tool calls), 4 framing tokens per message."""
    return sum(count_text_tokens(message_text(m), encoding) + 4 for m in messages)


def conversation(messages: list[BaseMessage]) -> list[BaseMessage]:
    return [m for m in messages if not isinstance(m, SystemMessage)]


def tool_results(messages: list[BaseMessage]) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage)]


def records_of(project, session_id: str) -> list[dict]:
    """The records of a middleware thread's transcript (the session is the thread id)."""
    return read_records(paths.session_transcript_path(project, session_id))
