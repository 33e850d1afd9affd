"""The names the replay command offers, importable without the replay machinery.

``mtagent --help`` builds every command's options, so the replay command's choices live here
rather than in the modules that implement them (which load the engine and LangChain).
"""

from __future__ import annotations

DEFAULT_WINDOW = 131_072
STRATEGY_NAMES = (
    "raw", "mtagent", "mtagent-sm", "masking", "lc-summarization", "lc-clear-tool-uses", "threshold-compact",
)
PEERS = ("masking", "lc-summarization", "lc-clear-tool-uses", "threshold-compact")
FORMAT_NAMES = (
    "claude-code",
    "mini-swe-agent",
    "mini-swe-agent-v1",
    "swe-agent",
    "openhands",
    "openhands-resolver",
    "aider",
    "mtagent",
)
