"""mtagent: a coding agent for very long sessions, and the context engine at its heart."""

__version__ = "0.1.0"
