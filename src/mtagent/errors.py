"""User-facing errors.

Every error a user can trigger derives from :class:`MTAgentError`; the CLI prints its
message as one line and exits with :attr:`MTAgentError.exit_code` — no traceback. A message
says what went wrong *and* what to do next.
"""

from __future__ import annotations


class MTAgentError(Exception):
    """Base of every error meant for the user."""

    exit_code: int = 1


class ConfigError(MTAgentError):
    """A configuration file, environment variable or argument is invalid."""

    exit_code = 2


class UsageError(MTAgentError):
    """The command line or an input file is not what the command expects."""

    exit_code = 2


class TranscriptCorrupt(MTAgentError):
    """A transcript line in the middle of the file cannot be parsed."""

    def __init__(self, path: str, line_no: int, reason: str) -> None:
        self.path = path
        self.line_no = line_no
        self.reason = reason
        super().__init__(
            f"transcript {path} is corrupt at line {line_no}: {reason}. "
            "Nothing was changed or deleted: every record is kept. `mtagent sessions show|export ID "
            "--skip-corrupt` reads past unreadable lines; to resume this session, repair that line "
            "(keep a copy of the file first)."
        )


class SessionLocked(MTAgentError):
    """Another process holds the session's writer lock."""

    def __init__(self, session_id: str, pid: int | None, host: str | None = None) -> None:
        self.session_id = session_id
        self.pid = pid
        self.host = host
        who = f"pid {pid}" if pid else "another process"
        who += f" on {host}" if host else ""
        super().__init__(
            f"session {session_id} is in use by {who}; close that mtagent first, "
            "or start a new session."
        )


class StorageError(MTAgentError):
    """The configured store (e.g. PostgreSQL at storage.dsn) cannot be reached or used."""


class SessionNotFound(MTAgentError):
    """No session with that id exists for this project."""

    exit_code = 2


class ArtifactPathError(MTAgentError):
    """An artifact path resolves outside its session's artifact folder."""


class WorkspacePathError(MTAgentError):
    """A tool was asked for a path outside the workspace roots."""


class ContextLengthExceeded(MTAgentError):
    """The provider rejected a request as longer than the model's context window."""

    def __init__(self, message: str, *, requested_tokens: int | None = None,
                 limit_tokens: int | None = None) -> None:
        self.requested_tokens = requested_tokens
        self.limit_tokens = limit_tokens
        super().__init__(message)


class CompactionFailed(MTAgentError):
    """A compaction could not produce a valid, smaller view."""


class ModelError(MTAgentError):
    """The model provider failed in a way retries did not fix."""


class ModelConfigError(ConfigError, ModelError):
    """No model, or no API key for it: a configuration error (exit 2), still a :class:`ModelError`."""


class ReplayFormatError(MTAgentError):
    """A trajectory file is not in the format the converter expects."""

    exit_code = 2
