"""Retrying a model call: tenacity's exponential backoff with jitter, and the provider's Retry-After.

Backoff doubles from ``agent.retry_base_seconds`` (capped at a minute), plus up to a quarter of it
at random so many clients hit by the same outage do not come back in step. When the provider says
how long to wait (``Retry-After`` / ``retry-after-ms`` on a 429 or 503), that wins if it is longer.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from typing import Any

RETRY_AFTER_MAX_SECONDS = 300.0  # a provider asking for longer is treated as this: the user can Ctrl-C


def _headers(exc: BaseException) -> Mapping[str, str] | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        cause = exc.__cause__ or exc.__context__
        return _headers(cause) if cause is not None and cause is not exc else None
    return headers


def retry_after_seconds(exc: BaseException, now: float | None = None) -> float | None:
    """Seconds the provider asked to wait (``retry-after-ms``, ``retry-after`` seconds or HTTP date)."""
    headers = _headers(exc)
    if not headers:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return min(RETRY_AFTER_MAX_SECONDS, max(0.0, float(ms) / 1000))
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            seconds = float(value)
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)
            seconds = when.timestamp() - (time.time() if now is None else now)
        return min(RETRY_AFTER_MAX_SECONDS, max(0.0, seconds))
    except (TypeError, ValueError, OverflowError):
        return None


def backoff_wait(base: float, max_seconds: float, jitter_fraction: float) -> Any:
    """tenacity's waits: base, 2×base, 4×base … (capped) plus a random 0–``jitter_fraction``×base."""
    from tenacity import wait_exponential, wait_random

    return wait_exponential(multiplier=base, max=max_seconds) + wait_random(0, base * jitter_fraction)
