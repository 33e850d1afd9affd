"""Secret redaction lives in :mod:`mtagent.redaction` (the engine redacts too); re-exported for the agent."""

from mtagent.redaction import MIN_SECRET_CHARS, REDACTED, RedactingSink, Redactor, collect_secrets

__all__ = ["MIN_SECRET_CHARS", "REDACTED", "RedactingSink", "Redactor", "collect_secrets"]
