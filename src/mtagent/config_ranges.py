"""Range and relation checks over the merged settings (``token_limit = 1e29`` is a typo, not a window).

Field bounds catch one value at a time; these catch what a bound cannot: non-finite or absurd
numbers in any section, and settings that contradict each other. Each error names the key.
"""

from __future__ import annotations

import math
from typing import Any

# every number a user can set must be finite and below this
MAX_SETTING_NUMBER = 10**12


class SettingRangeError(ValueError):
    """A value out of range, or two settings that contradict each other; ``key`` names the culprit."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


def check_ranges(settings: Any) -> None:
    """Raise :class:`SettingRangeError` for the first out-of-range value or contradiction."""
    for section in type(settings).model_fields:
        body = getattr(settings, section)
        for key in type(body).model_fields:
            value = getattr(body, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            if not math.isfinite(value) or abs(value) > MAX_SETTING_NUMBER:
                raise SettingRangeError(f"{section}.{key}", f"{section}.{key} = {value!r} is out of range "
                                        f"(at most {MAX_SETTING_NUMBER:,})")
    ctx = settings.context
    if ctx.compression_preserve_min_tokens > ctx.compression_preserve_max_tokens:
        raise SettingRangeError(
            "context.compression_preserve_min_tokens",
            f"context.compression_preserve_min_tokens ({ctx.compression_preserve_min_tokens:,}) is above "
            f"context.compression_preserve_max_tokens ({ctx.compression_preserve_max_tokens:,}); make min <= max")
