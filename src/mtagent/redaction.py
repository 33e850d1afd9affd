"""Keep secrets out of model payloads and transcripts.

An API key reaches the model client's auth header and nowhere else — but a tool can still
surface one (``env``, ``cat .env``, a stack trace). So the agent collects the secret *values*
it knows of (the key it was given, and environment variables whose names look like secrets)
and replaces them in every tool result before the model or the transcript sees it, and in
every record before it is written.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

REDACTED = "[redacted]"
_SECRET_NAME = re.compile(r"(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE_KEY)", re.IGNORECASE)
# Shorter values are too likely to be ordinary words or numbers to replace everywhere.
MIN_SECRET_CHARS = 8


def collect_secrets(environ: Mapping[str, str] | None = None, extra: Iterable[str | None] = ()) -> tuple[str, ...]:
    """Secret values: ``extra`` (keys in use) plus env vars named like ``*_API_KEY``, ``*TOKEN*`` …"""
    env = os.environ if environ is None else environ
    found = {v for k, v in env.items() if _SECRET_NAME.search(k) and len(v) >= MIN_SECRET_CHARS}
    found |= {v for v in extra if v and len(v) >= MIN_SECRET_CHARS}
    return tuple(sorted(found, key=len, reverse=True))


@dataclass(slots=True, frozen=True)
class Redactor:
    secrets: tuple[str, ...] = ()

    def text(self, value: str) -> str:
        for secret in self.secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value

    def __call__(self, value: str) -> str:
        return self.text(value)

    def deep(self, value: Any) -> Any:
        """``value`` with every string inside (dict keys and values, lists) redacted."""
        if not self.secrets:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.deep(k): self.deep(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.deep(v) for v in value]
        return value


@dataclass(slots=True)
class RedactingSink:
    """A record sink that redacts every record before passing it on."""

    inner: Any
    redactor: Redactor

    def append(self, record: dict[str, Any]) -> object:
        return self.inner.append(self.redactor.deep(record))
