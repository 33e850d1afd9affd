"""Turning untrusted text into safe FTS5 queries, and finding identifiers worth recalling.

A query comes from a model's tool call, a user's command line or a new message: it is hostile
input for FTS5's own query language (``"``, ``NEAR(``, ``*``, ``AND``, column filters). We never
pass it through: only word tokens are kept, each is double-quoted, a multi-token chunk becomes a
phrase (``src/auth/session.ts`` → ``"src" "auth" …`` as one phrase, matching the path's tokens
in order) and chunks are joined with ``OR`` so BM25 ranks items by how much of the query they hold.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+", re.UNICODE)
MAX_TOKEN_CHARS = 64
MAX_QUERY_SCAN_CHARS = 20_000

_PATH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)+[\w.-]+\.[A-Za-z]{1,6}|[\w-]+\.(?:py|js|ts|tsx|jsx|go|rs|c|h|cc|cpp|"
                   r"java|rb|md|toml|yaml|yml|json|cfg|ini|sh|sql|txt|lock|html|css))\b")
_CODE_NAME = re.compile(r"\b([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[a-z][a-z0-9]*(?:_[a-z0-9]+)+|"
                        r"[a-z]+[A-Z][A-Za-z0-9]*)\b")
_CALLED = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]{3,}(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\(")
_BACKTICK = re.compile(r"`([^`\n]{3,80})`")
_ERROR_NAME = re.compile(r"\b(\w+(?:Error|Exception))\b")
_ERROR_LINE = re.compile(r"(\b\w+(?:Error|Exception)\b|\bError:|\bFAILED\b|\berror[:\[]|\bfatal:|\bpanic:)")
MIN_IDENTIFIER_CHARS = 4
# Single words that match nearly every item: skipped when a query has other words (their posting
# lists are the whole index, and they rank nothing).
STOPWORDS = frozenset("a an the to of in on at by for and or is it be as no not with from this that was are "
                      "were has have had do does did if then else".split())


def fts_query(text: str, *, max_terms: int = 32) -> str | None:
    """A safe FTS5 MATCH expression for ``text`` (None when it holds no searchable word).

    Never raises, whatever ``text`` holds; the result only ever contains double-quoted word
    tokens, spaces and the ``OR`` operator.
    """
    if not isinstance(text, str):
        return None
    chunks: list[str] = []
    seen: set[str] = set()
    terms = 0
    for raw in text[:MAX_QUERY_SCAN_CHARS].split():
        words = [w[:MAX_TOKEN_CHARS].lower() for w in _WORD.findall(raw)]
        if not words:
            continue
        words = words[: max(1, max_terms - terms)]
        chunk = '"' + " ".join(words) + '"'  # one phrase: its tokens must be adjacent and in order
        if chunk in seen:
            continue
        seen.add(chunk)
        chunks.append(chunk)
        terms += len(words)
        if terms >= max_terms:
            break
    if not chunks:
        return None
    specific = [c for c in chunks if " " in c or (len(c) > 4 and c[1:-1] not in STOPWORDS)]
    return " OR ".join(specific or chunks)


def query_words(text: str, *, max_terms: int = 32) -> list[str]:
    """The lower-cased word tokens of a query (for snippets and confidence)."""
    if not isinstance(text, str):
        return []
    return [w[:MAX_TOKEN_CHARS].lower() for w in _WORD.findall(text[:MAX_QUERY_SCAN_CHARS])][:max_terms]


def identifiers(text: str, *, limit: int = 8) -> list[str]:
    """Distinctive names a message mentions: paths, code names, called functions, error names,
    backticked words, and an error line of a failed tool — what a compaction may have removed."""
    if not isinstance(text, str):
        return []
    sample = text[:MAX_QUERY_SCAN_CHARS]
    found: list[str] = []
    for pattern in (_PATH, _BACKTICK, _ERROR_NAME, _CALLED, _CODE_NAME):
        for match in pattern.finditer(sample):
            token = match.group(1).strip()
            if len(token) >= MIN_IDENTIFIER_CHARS and token not in found and _WORD.search(token):
                found.append(token)
    for line in sample.splitlines():
        stripped = line.strip()
        if 8 <= len(stripped) <= 200 and _ERROR_LINE.search(stripped) and stripped not in found:
            found.append(stripped)
            break
    return found[:limit]
