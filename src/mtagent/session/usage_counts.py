"""Token counts in a transcript's ``usage``: what a rebuilt message's ``usage_metadata`` must hold.

A transcript line is untrusted: ``"input_tokens": Infinity`` (or NaN, -5, 1.5, a string) would
make langchain refuse the message when a session is shown or resumed — a traceback, or a 9-line
validation error. The schema checks the counts here, so such a line is one corrupt-record message.
"""

from __future__ import annotations

from typing import Any

USAGE_KEYS = ("input_tokens", "output_tokens", "total_tokens")
USAGE_DETAILS = ("input_token_details", "output_token_details")


def bad_token_count(usage: dict[str, Any], depth: int = 0) -> str | None:
    """The first token count in ``usage`` (the three totals and their ``*_details``) that is not a
    whole number >= 0, as ``key=value``; None when all are. Other keys are not checked."""
    for key, value in usage.items():
        if depth == 0 and key not in USAGE_KEYS and key not in USAGE_DETAILS:
            continue
        if isinstance(value, dict) and depth == 0 and key in USAGE_DETAILS:
            inner = bad_token_count(value, depth + 1)
            if inner is not None:
                return f"{key}.{inner}"
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"{key}={str(value)[:40]!r}"
        elif isinstance(value, float) and not (value.is_integer() and value >= 0):
            return f"{key}={value!r}"
        elif value < 0:
            return f"{key}={value!r}"
    return None
