"""What went wrong with a model call, and whether trying again can help.

Providers report the same conditions differently; :func:`classify` maps an exception to one
:class:`ErrorKind` using, in order, LangChain's typed model errors, the HTTP status the SDK
attached, and the message text. The agent then acts per kind:

* ``CONTEXT_LENGTH`` → the engine's reactive compact, then one retry (:class:`~mtagent.context.engine_session.EngineSession`);
* ``RATE_LIMIT`` / ``SERVER`` / ``TIMEOUT`` / ``CONNECTION`` → :func:`call_with_retries`,
  bounded by ``agent.max_retries`` with exponential backoff and jitter from ``agent.retry_base_seconds``
  (a provider's longer ``Retry-After`` wins; :mod:`mtagent.context.retry`);
* ``AUTH`` and everything else → one :class:`~mtagent.errors.ModelError` whose message says
  what to do (and never repeats a key).
"""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar

from langchain_core import exceptions as lc_errors

from mtagent.errors import ContextLengthExceeded, ModelError

T = TypeVar("T")


class ErrorKind(str, Enum):
    CONTEXT_LENGTH = "context_length"
    RATE_LIMIT = "rate_limit"
    SERVER = "server"
    TIMEOUT = "timeout"
    CONNECTION = "connection"
    UNREACHABLE = "unreachable"  # connection refused, unknown host: no server there to retry
    AUTH = "auth"
    BAD_REQUEST = "bad_request"
    PERMANENT = "permanent"
    DEADLINE = "deadline"
    OTHER = "other"


RETRYABLE = frozenset({ErrorKind.RATE_LIMIT, ErrorKind.SERVER, ErrorKind.TIMEOUT, ErrorKind.CONNECTION})

# Rejections no retry can fix (server started without a feature, parameter the model refuses,
# model missing, account out of money), whatever the status says — llama-server answers
# "tools param requires --jinja flag" with a 500. Each pattern carries the next step for the user.
_PERMANENT: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(p, re.IGNORECASE), hint) for p, hint in (
    (r"requires --jinja", "start llama-server with --jinja so it accepts tools"),
    (r"enable-auto-tool-choice|tool choice requires",
     "start vLLM with --enable-auto-tool-choice --tool-call-parser <parser>"),
    (r"does not support tools", "pick a model whose chat template supports tools (e.g. qwen2.5, llama3.1)"),
    (r"unsupported[_ ]parameter|is not supported with this model|unsupported_value",
     "remove that option from agent.model_options (or set agent.server to the right profile)"),
    (r"insufficient_quota|exceeded your current quota|credit balance is too low|insufficient balance",
     "add credit to the provider account, or use another model"),
    (r"model_not_found|does not exist|not found, try pulling|no models loaded",
     "check the model name (--model), or load/pull the model on the server"),
))

_SECRET_LIKE = re.compile(r"\b(sk|key|tok)[-_][A-Za-z0-9_\-]{8,}")

_CONTEXT_PATTERNS = re.compile(
    r"context_length_exceeded|maximum context length|context length|context window|"
    r"prompt is too long|prompt too long|input is too long|too many (?:input )?tokens|"
    r"reduce the length of the messages|request too large|exceeds the (?:model's )?(?:maximum|max)|"
    r"string_above_max_length|max_tokens_exceeded|input length .* exceeds|"
    # llama.cpp (exceed_context_size_error), LM Studio (n_keep/n_ctx), Ollama ("max context length")
    r"exceed_context_size_error|exceeds the available context size|context the overflows|"
    r"n_keep \(?\d+\)? ?>= ?n_ctx|max context length",
    re.IGNORECASE,
)
_OPENAI_GAP = re.compile(
    r"maximum context length is (\d[\d,]*) tokens.*?(?:requested|resulted in|you have) (\d[\d,]*) tokens",
    re.IGNORECASE | re.DOTALL,
)
_ANTHROPIC_GAP = re.compile(r"(\d[\d,]*) tokens? > (\d[\d,]*)", re.IGNORECASE)
_GENERIC_GAP = re.compile(
    r"(\d[\d,]*) (?:input )?tokens?.{0,80}?(?:exceeds|greater than|larger than|over).{0,40}?(\d[\d,]*)",
    re.IGNORECASE | re.DOTALL,
)


def _chain(exc: BaseException, limit: int = 8) -> list[BaseException]:
    """``exc`` and the exceptions it wraps (cause, else context), each once, at most ``limit``."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < limit:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _error_text(exc: BaseException) -> str:
    parts = [str(exc)]
    body = getattr(exc, "body", None)
    if body is not None:
        parts.append(str(body))
    code = getattr(exc, "code", None)
    if code is not None:
        parts.append(str(code))
    return " ".join(parts)


def is_context_length_error(exc: BaseException) -> bool:
    """True when ``exc`` (or an exception it wraps) says the prompt exceeds the context window: the
    engine's :class:`ContextLengthExceeded`, LangChain's typed ``ContextOverflowError``, a provider's
    message (OpenAI, Anthropic, vLLM/llama.cpp-style) or a 413. The one classifier: the engine's
    reactive compaction, the compactor's too-long summary retry and :func:`classify` all ask it."""
    for err in _chain(exc):
        if isinstance(err, ContextLengthExceeded | lc_errors.ContextOverflowError):
            return True
        text = _error_text(err)
        if _CONTEXT_PATTERNS.search(text):
            return True
        status = getattr(err, "status_code", None) or getattr(getattr(err, "response", None), "status_code", None)
        if status == 413:
            return True
    return False


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def parse_context_length_gap(exc: BaseException) -> int | None:
    """How many tokens over the limit the provider says the request was, when it says so."""
    for err in _chain(exc):
        if isinstance(err, ContextLengthExceeded) and err.requested_tokens and err.limit_tokens:
            return max(0, err.requested_tokens - err.limit_tokens)
        text = _error_text(err)
        match = _OPENAI_GAP.search(text)
        if match:
            return max(0, _int(match.group(2)) - _int(match.group(1)))
        for pattern in (_ANTHROPIC_GAP, _GENERIC_GAP):
            match = pattern.search(text)
            if match:
                requested, limit = _int(match.group(1)), _int(match.group(2))
                if requested > limit:
                    return requested - limit
    return None


def _status(exc: BaseException) -> int | None:
    for attr in ("status_code", "status", "http_status"):
        value = getattr(exc, attr, None)
        if isinstance(value, int):
            return value
    response = getattr(exc, "response", None)
    value = getattr(response, "status_code", None)
    return value if isinstance(value, int) else None


def permanent_hint(exc: BaseException) -> str | None:
    """The next step for a rejection that retrying cannot fix, or None when ``exc`` is not one."""
    text = f"{exc} {getattr(exc, 'body', '')} {getattr(exc, 'code', '')}"
    for pattern, hint in _PERMANENT:
        if pattern.search(text):
            return hint
    return None


def deadline_error(exc: BaseException) -> BaseException | None:
    """The total-deadline stop (an error marked ``total_deadline_exceeded``) in ``exc``'s chain.
    Not retried: the same request would run as long again."""
    current: BaseException | None = exc
    for _ in range(8):
        if current is None:
            return None
        if getattr(current, "total_deadline_exceeded", False):
            return current
        current = current.__cause__ or current.__context__
    return None


_UNREACHABLE = re.compile(r"connection refused|errno 111|name or service not known|nodename nor servname|"
                          r"getaddrinfo failed|no address associated", re.IGNORECASE)


def unreachable(exc: BaseException) -> tuple[str, str | None] | None:
    """(why, url) when no server answers at all — connection refused, an unknown host — which a
    retry cannot fix (a dead ``--base-url`` cost 3 retries and 13.7 s); None otherwise."""
    why, url = None, None
    for current in _chain(exc, limit=10):
        try:
            url = url or str(getattr(current, "request").url)
        except Exception:  # noqa: BLE001 — httpx raises when an error carries no request
            pass
        text = str(current)
        if isinstance(current, (ConnectionRefusedError, socket.gaierror)) or _UNREACHABLE.search(text):
            why = why or ("connection refused" if "refused" in text.lower() or isinstance(
                current, ConnectionRefusedError) else "unknown host")
    return (why, url) if why else None


def classify(exc: BaseException) -> ErrorKind:
    """The :class:`ErrorKind` of an exception raised by a chat model call."""
    if deadline_error(exc) is not None:
        return ErrorKind.DEADLINE
    if unreachable(exc) is not None:
        return ErrorKind.UNREACHABLE
    if is_context_length_error(exc):
        return ErrorKind.CONTEXT_LENGTH
    if permanent_hint(exc) is not None or _status(exc) == 402:
        return ErrorKind.PERMANENT
    typed: list[tuple[type[BaseException], ErrorKind]] = [
        (lc_errors.ModelAuthenticationError, ErrorKind.AUTH),
        (lc_errors.ModelPermissionDeniedError, ErrorKind.AUTH),
        (lc_errors.ModelRateLimitError, ErrorKind.RATE_LIMIT),
        (lc_errors.ModelTimeoutError, ErrorKind.TIMEOUT),
        (lc_errors.ModelConnectionError, ErrorKind.CONNECTION),
        (lc_errors.ModelAPIError, ErrorKind.SERVER),
        (lc_errors.ModelInvalidRequestError, ErrorKind.BAD_REQUEST),
        (lc_errors.ModelNotFoundError, ErrorKind.BAD_REQUEST),
    ]
    for cls, kind in typed:
        if isinstance(exc, cls):
            return kind
    status = _status(exc)
    if status in (401, 403):
        return ErrorKind.AUTH
    if status == 429:
        return ErrorKind.RATE_LIMIT
    if status == 408:
        return ErrorKind.TIMEOUT
    if status is not None and 500 <= status < 600:
        return ErrorKind.SERVER
    if status is not None and 400 <= status < 500:
        return ErrorKind.BAD_REQUEST
    name = type(exc).__name__.lower()
    if "timeout" in name or isinstance(exc, TimeoutError):
        return ErrorKind.TIMEOUT
    if "connection" in name or isinstance(exc, ConnectionError):
        return ErrorKind.CONNECTION
    if "ratelimit" in name:
        return ErrorKind.RATE_LIMIT
    if "authentication" in name or "permissiondenied" in name:
        return ErrorKind.AUTH
    return ErrorKind.OTHER


def redact(text: str, secrets: tuple[str, ...] = ()) -> str:
    """``text`` with every known secret value and anything key-shaped replaced."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
    return _SECRET_LIKE.sub("[redacted]", text)


def to_model_error(exc: BaseException, kind: ErrorKind, *, model: str, attempts: int,
                   secrets: tuple[str, ...] = ()) -> ModelError:
    """One clear, key-free message per kind, saying what the user can do."""
    detail = redact(str(exc), secrets)[:300]
    if kind is ErrorKind.AUTH:
        return ModelError(
            f"the provider rejected the credentials for {model}: check the API key "
            "(e.g. OPENAI_API_KEY) and that it may use this model"
        )
    if kind in RETRYABLE:
        return ModelError(
            f"{model} failed after {attempts} attempt(s) ({kind.value}): {detail}; "
            "try again later, or raise agent.max_retries"
        )
    if kind is ErrorKind.CONTEXT_LENGTH:
        return ModelError(
            f"{model} rejected the request as too long even after compacting: {detail}; "
            "run /compact, or set agent.model_windows for this model to its real window"
        )
    if kind is ErrorKind.DEADLINE:
        return ModelError(f"{model}: {deadline_error(exc) or detail}")
    if kind is ErrorKind.UNREACHABLE:
        why, url = unreachable(exc) or ("no answer", None)
        where = f" at {redact(re.sub(r'//[^/@]*@', '//', url), secrets)}" if url else ""  # no user:password
        return ModelError(f"cannot reach {model}{where}: {why}; start the server, or check --base-url "
                          "(agent.base_url) and the host name")
    if kind is ErrorKind.PERMANENT:
        hint = permanent_hint(exc) or "check the provider account and the model settings"
        return ModelError(f"{model} refused the request and retrying will not help: {detail}; {hint}")
    return ModelError(f"{model} call failed ({kind.value}): {detail}")


@dataclass(slots=True, frozen=True)
class RetryPolicy:
    """Bounded retries: exponential backoff with jitter (see :mod:`mtagent.context.retry`)."""

    max_retries: int
    base_seconds: float
    max_seconds: float = 60.0
    jitter_fraction: float = 0.25

    def delay(self, attempt: int, exc: BaseException | None = None) -> float:
        """The wait before retry ``attempt + 1``: backoff with jitter, or the provider's longer Retry-After."""
        from tenacity import RetryCallState

        from mtagent.context.retry import backoff_wait, retry_after_seconds

        state = RetryCallState(None, None, (), {})
        state.attempt_number = attempt + 1
        wait = min(self.max_seconds, backoff_wait(self.base_seconds, self.max_seconds, self.jitter_fraction)(state))
        asked = retry_after_seconds(exc) if exc is not None else None
        return max(wait, asked) if asked is not None else wait


def call_with_retries(
    fn: Callable[[], T],
    policy: RetryPolicy,
    *,
    on_retry: Callable[[int, ErrorKind, BaseException, float], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run ``fn``; retry it on transient errors only (tenacity drives the loop). Other errors
    propagate unchanged, and so does the last one when retries are used up; callers turn it into
    a :class:`ModelError` with :func:`to_model_error` (they know the model's name)."""
    from tenacity import Retrying, retry_if_exception, stop_after_attempt

    def wait(state: Any) -> float:
        return policy.delay(state.attempt_number - 1, state.outcome.exception())

    def before_sleep(state: Any) -> None:
        exc = state.outcome.exception()
        if on_retry is not None:
            on_retry(state.attempt_number, classify(exc), exc, state.next_action.sleep)

    retrying = Retrying(retry=retry_if_exception(lambda exc: classify(exc) in RETRYABLE),
                        stop=stop_after_attempt(policy.max_retries + 1), wait=wait, sleep=sleep,
                        before_sleep=before_sleep, reraise=True)
    return retrying(fn)
