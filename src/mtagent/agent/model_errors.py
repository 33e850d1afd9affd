"""Model-error classification lives in the engine (:mod:`mtagent.context.model_errors`), which both
front ends share; re-exported here for the agent's callers."""

from mtagent.context.model_errors import (
    RETRYABLE,
    ErrorKind,
    RetryPolicy,
    call_with_retries,
    classify,
    is_context_length_error,
    redact,
    to_model_error,
)

__all__ = ["RETRYABLE", "ErrorKind", "RetryPolicy", "call_with_retries", "classify", "is_context_length_error",
           "redact", "to_model_error"]
