"""Provider errors from the real OpenAI client are classified, retried or reported as designed; retries honour
the provider's Retry-After (seconds, ms or HTTP date) and add jitter to the backoff."""

from __future__ import annotations

import email.utils
import time
from types import SimpleNamespace

import openai
import pytest
from langchain_openai import ChatOpenAI

from mtagent.context.model_errors import (
    ErrorKind,
    RetryPolicy,
    call_with_retries,
    classify,
    redact,
    to_model_error,
)
from mtagent.context.retry import RETRY_AFTER_MAX_SECONDS, retry_after_seconds
from mtagent.context.tokens import count_text_tokens
from stub_openai import StubOpenAI

CANARY = "sk-canary-errors-0123456789abcdef"


def _client(stub: StubOpenAI, timeout: float = 5.0) -> ChatOpenAI:
    return ChatOpenAI(model="gpt-4o-mini", base_url=stub.base_url, api_key=CANARY, max_retries=0, timeout=timeout)


def _raised(stub: StubOpenAI, timeout: float = 5.0) -> BaseException:
    count_text_tokens("warm the tokenizer before timing anything")
    with pytest.raises(Exception) as info:
        _client(stub, timeout).invoke("hello")
    return info.value


@pytest.mark.parametrize(("step", "kind"), [
    ({"error": 400, "code": "context_length_exceeded",
      "message": "This model's maximum context length is 128000 tokens. However, you requested 130000 tokens."},
     ErrorKind.CONTEXT_LENGTH),
    ({"error": 429, "message": "Rate limit reached"}, ErrorKind.RATE_LIMIT),
    ({"error": 500, "message": "boom"}, ErrorKind.SERVER),
    ({"error": 503, "message": "overloaded"}, ErrorKind.SERVER),
    ({"error": 401, "message": "Incorrect API key provided"}, ErrorKind.AUTH),
    ({"error": 400, "message": "messages: bad role"}, ErrorKind.BAD_REQUEST),
])
def test_real_client_errors_are_classified(step, kind):
    with StubOpenAI([step]) as stub:
        assert classify(_raised(stub)) is kind


def test_a_request_past_the_client_timeout_is_a_timeout():
    with StubOpenAI([{"sleep": 1.0, "content": "late"}]) as stub:
        assert classify(_raised(stub, timeout=0.3)) is ErrorKind.TIMEOUT


def test_transient_errors_are_retried_with_doubling_backoff_then_succeed():
    with StubOpenAI([{"error": 429}, {"error": 500}, {"content": "ok"}]) as stub:
        client = _client(stub)
        waits: list[float] = []
        reply = call_with_retries(lambda: client.invoke("hi"), RetryPolicy(3, 0.5), sleep=waits.append)
        assert reply.content == "ok"
        assert 0.5 <= waits[0] <= 0.625 and 1.0 <= waits[1] <= 1.125  # doubling, plus up to 25% jitter
        assert len(stub.requests) == 3


def test_retries_are_bounded_and_the_last_error_propagates():
    with StubOpenAI([{"error": 500}] * 5) as stub:
        client = _client(stub)
        with pytest.raises(Exception) as info:
            call_with_retries(lambda: client.invoke("hi"), RetryPolicy(2, 0.0), sleep=lambda _s: None)
        assert classify(info.value) is ErrorKind.SERVER
        assert len(stub.requests) == 3


def test_context_length_and_auth_errors_are_not_retried():
    with StubOpenAI([{"error": 401}, {"error": 400, "code": "context_length_exceeded", "message": "too long"}]) as stub:
        client = _client(stub)
        for _ in range(2):
            with pytest.raises(openai.APIStatusError):
                call_with_retries(lambda: client.invoke("hi"), RetryPolicy(3, 0.0), sleep=lambda _s: None)
        assert len(stub.requests) == 2


def test_auth_error_message_is_clear_and_never_repeats_the_key():
    exc = RuntimeError(f"Error code: 401 - Incorrect API key provided: {CANARY}")
    err = to_model_error(exc, ErrorKind.AUTH, model="openai:gpt-4o-mini", attempts=1, secrets=(CANARY,))
    assert "check the API key" in str(err)
    assert CANARY not in str(err)
    other = to_model_error(exc, ErrorKind.OTHER, model="m", attempts=1, secrets=(CANARY,))
    assert CANARY not in str(other)


def test_redact_removes_known_secrets_and_key_shaped_strings():
    assert redact("key=abc123secret!", ("abc123secret",)) == "key=[redacted]!"
    assert "sk-proj-" not in redact("use sk-proj-AAAAAAAAAAAAAAAA now")


def test_a_refused_connection_or_an_unknown_host_is_unreachable_not_transient():
    import socket

    import httpx

    from mtagent.context.model_errors import RETRYABLE, ErrorKind, classify, to_model_error

    request = httpx.Request("POST", "http://me:s3cret@10.9.8.7:8000/v1/chat/completions")
    for cause, why in ((ConnectionRefusedError(111, "Connection refused"), "connection refused"),
                       (socket.gaierror(-2, "Name or service not known"), "unknown host")):
        try:
            try:
                raise cause
            except OSError as inner:
                raise httpx.ConnectError(str(inner), request=request) from inner
        except httpx.ConnectError as exc:
            kind = classify(exc)
            assert kind is ErrorKind.UNREACHABLE and kind not in RETRYABLE
            message = str(to_model_error(exc, kind, model="openai:m", attempts=1))
            assert f"at http://10.9.8.7:8000/v1/chat/completions: {why}" in message and "s3cret" not in message
    timeout = httpx.ConnectTimeout("timed out", request=request)  # a slow server may still answer: retried
    assert classify(timeout) in RETRYABLE


class RateLimited(Exception):
    def __init__(self, headers):
        super().__init__("429 Too Many Requests")
        self.status_code = 429
        self.response = SimpleNamespace(headers=headers, status_code=429)


def test_retry_after_forms_and_hostile_values():
    assert retry_after_seconds(RateLimited({"retry-after": "7"})) == 7.0
    assert retry_after_seconds(RateLimited({"retry-after-ms": "1500"})) == 1.5
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= retry_after_seconds(RateLimited({"retry-after": date})) <= 31
    assert retry_after_seconds(RateLimited({"retry-after": "99999999"})) == RETRY_AFTER_MAX_SECONDS
    assert retry_after_seconds(RateLimited({"retry-after": "-5"})) == 0.0
    assert retry_after_seconds(RateLimited({"retry-after": "soon, maybe"})) is None
    assert retry_after_seconds(RateLimited({})) is None and retry_after_seconds(ValueError("x")) is None


def test_a_longer_retry_after_wins_over_the_backoff_and_jitter_varies():
    calls = {"n": 0}

    def flaky():
        calls["n"] += 1
        if calls["n"] < 3:
            raise RateLimited({"retry-after": "4"} if calls["n"] == 1 else {})
        return "ok"

    waits: list[float] = []
    assert call_with_retries(flaky, RetryPolicy(3, 1.0), sleep=waits.append) == "ok"
    assert waits[0] == 4.0 and 2.0 <= waits[1] <= 2.25
    spread = {RetryPolicy(3, 1.0).delay(2) for _ in range(20)}
    assert len(spread) > 1 and all(4.0 <= w <= 4.25 for w in spread)
