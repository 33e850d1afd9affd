"""Retries honour the provider's Retry-After (seconds, ms or HTTP date) and add jitter to the backoff."""

from __future__ import annotations

import email.utils
import time
from types import SimpleNamespace

from mtagent.context.model_errors import RetryPolicy, call_with_retries
from mtagent.context.retry import RETRY_AFTER_MAX_SECONDS, retry_after_seconds


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
