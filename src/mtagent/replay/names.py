"""The names the replay command offers, importable without the replay machinery.

``mtagent --help`` builds every command's options, so the replay command's choices live here
rather than in the modules that implement them (which load the engine and LangChain).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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


@dataclass(frozen=True, slots=True)
class Arm:
    """One comparison arm, defined once for both comparisons: ``strategy`` imitates the peer exactly on
    a recording (``mtagent replay``); ``policy`` approximates it closed-loop (``mtagent eval``) with the
    live engine's own knobs — ``overlay``, settings sections over the defaults, as in ``config.toml``."""

    strategy: str
    policy: str
    overlay: dict[str, dict[str, Any]]


_NO_MEMORY_NO_RECALL: dict[str, dict[str, Any]] = {
    "session_memory": {"enabled": False},
    "recall": {"enabled": False, "retrieve_after_compaction": False},
}
ARMS = (  # the peers themselves: mtagent.replay.strategies; the live overlays: no session memory, no recall
    Arm("mtagent", "mtagent", {}),  # the defaults
    Arm("threshold-compact", "threshold", {"context": {"compaction_trigger": "threshold"}, **_NO_MEMORY_NO_RECALL}),
    Arm("masking", "masking", {  # old results cleared (newest 10 kept) past half the window; summaries at its edge
        "context": {"compaction_trigger": "threshold", "auto_compact_threshold": 0.95},
        "microcompact": {"size_trigger_fraction": 0.5, "size_target_fraction": 0.05, "keep_recent": 10},
        **_NO_MEMORY_NO_RECALL}),
    Arm("lc-summarization", "lc-summarization", {  # no re-attached files, no incremental or cache-aligned summaries
        "context": {"compaction_trigger": "threshold", "reattach_max_files": 0, "incremental_summaries": False,
                    "cache_aligned_summaries": False},
        **_NO_MEMORY_NO_RECALL}),
)
