"""The settings' sections: one pydantic model per TOML table, every spec number once with its default.

:mod:`mtagent.config` composes them into :class:`~mtagent.config.Settings` and layers the sources;
the threshold formula sits here beside its settings so that config never imports the engine.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# list prices in USD per million tokens (edit agent.prices when they change)
DEFAULT_PRICES: dict[str, dict[str, float]] = {
    "gpt-4o-mini": {"input": 0.15, "output": 0.6, "cache_read": 0.075, "cache_write": 0.15},
    "gpt-4o": {"input": 2.5, "output": 10.0, "cache_read": 1.25, "cache_write": 2.5},
    "gpt-4.1": {"input": 2.0, "output": 8.0, "cache_read": 0.5, "cache_write": 2.0},
    "gpt-4.1-mini": {"input": 0.4, "output": 1.6, "cache_read": 0.1, "cache_write": 0.4},
    "claude-sonnet-4*": {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75},
    "claude-opus-4*": {"input": 15.0, "output": 75.0, "cache_read": 1.5, "cache_write": 18.75},
    "claude-3-5-haiku*": {"input": 0.8, "output": 4.0, "cache_read": 0.08, "cache_write": 1.0},
}


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ContextSettings(_Section):
    """The window and when to compact it (spec 000 M0, M4, M5)."""

    token_limit: int = Field(131_072, gt=0, le=100_000_000, description="model context window, tokens")
    summary_reserved_tokens: int = Field(20_000, ge=0, description="kept free for the summary output")
    autocompact_buffer_tokens: int = Field(13_000, ge=0, description="safety buffer below the effective limit")
    min_threshold_fraction: float = Field(
        0.45, ge=0, le=1, description="the default threshold never falls below this share of the window (small models)"
    )
    auto_compact_threshold: int | float | None = Field(
        None,
        description="override: tokens (int > 1) or a fraction of token_limit (0 < x <= 1); "
        "default token_limit - summary_reserved - buffer",
    )
    compression_preserve_min_tokens: int = Field(10_000, ge=0, description="recent tail kept by a compact, at least")
    compression_preserve_max_tokens: int = Field(40_000, ge=0, description="recent tail kept by a compact, at most")
    compact_max_consecutive_failures: int = Field(3, ge=1, description="circuit breaker for auto compaction")
    compaction_trigger: Literal["cost", "threshold"] = Field(
        "cost", description="cost: compact once the expected cache saving exceeds the compaction's cost "
        "(the threshold stays the hard ceiling); threshold: only at the threshold"
    )
    price_cache_read: float = Field(0.1, ge=0, description="price of a cached input token (uncached input = 1)")
    price_cache_write: float = Field(1.25, ge=0, description="price of writing a token to the prompt cache")
    price_input: float = Field(1.0, gt=0, description="price of an uncached input token (the unit)")
    price_output: float = Field(5.0, ge=0, description="price of an output token")
    cost_tail_min_tokens: int = Field(1_000, ge=0, description="recent tail kept by a cost-triggered compact, at least")
    cost_tail_max_tokens: int = Field(4_000, ge=0, description="recent tail kept by a cost-triggered compact, at most")
    cost_min_calls: int = Field(8, ge=1, description="calls a session runs before the cost trigger may fire")
    expected_summary_tokens: int = Field(2_000, ge=0, description="summary size the cost trigger assumes")
    summary_output_tokens: int = Field(
        600, ge=64, description="output budget of the model's part of a hand-off (state, findings, hypotheses, "
        "next step); the engine renders the rest (the ledger) itself"
    )
    cache_aligned_summaries: bool = Field(
        True, description="send a summary request as the last main request + one instruction (prompt-cache hit)"
    )
    incremental_summaries: bool = Field(
        True, description="after the first compaction summarize only what is new and merge it into the hand-off"
    )
    ptl_retry_max: int = Field(3, ge=0, description="prompt-too-long retries of a summary request")
    ptl_min_drop_fraction: float = Field(0.2, gt=0, le=1, description="drop at least this share of rounds per retry")
    reattach_max_files: int = Field(5, ge=0, description="recently read files re-attached after a compact")
    reattach_max_tokens: int = Field(50_000, ge=0, description="token budget for re-attached files")
    manual_compact_tries: int = Field(
        4, ge=1, description="/compact attempts to leave a smaller window (then without re-attached files, "
        "then halving the summary); after them nothing changes"
    )
    manual_summary_min_tokens: int = Field(256, ge=1, description="a manual compaction's summary is not cut below this")
    encoding: Literal["o200k_base", "cl100k_base"] = Field("o200k_base", description="tokenizer encoding")
    message_overhead_tokens: int = Field(4, ge=0, description="per-message framing tokens in estimates")
    compact_every_rounds: int = Field(
        0, ge=0, description="also compact every N user rounds (spec 002's service example: 25); 0 = off"
    )

    @field_validator("auto_compact_threshold")
    @classmethod
    def _threshold_shape(cls, value: int | float | None) -> int | float | None:
        if value is None:
            return None
        if isinstance(value, bool):
            raise ValueError("must be a token count or a fraction, not a boolean")
        if isinstance(value, float) and value <= 1:
            if value <= 0:
                raise ValueError("a fraction of the window must be in (0, 1]")
            return value
        if isinstance(value, float) and not value.is_integer():
            raise ValueError("a token count must be a whole number (use 0 < x <= 1 for a fraction)")
        if value <= 1:
            raise ValueError("a token count must be > 1 (use a fraction like 0.8 for a share of the window)")
        return int(value)


_CONTEXT = ContextSettings.model_fields  # the formula below sits beside its settings: they never import the engine


def effective_context_limit(token_limit: int, reserved_summary_tokens: int = _CONTEXT["summary_reserved_tokens"].default
                            ) -> int:
    """The window less what a summary's output needs (spec 000 M0)."""
    if token_limit <= 0:
        raise ValueError(f"token_limit must be positive, got {token_limit}")
    return max(1, token_limit - reserved_summary_tokens)


def auto_compact_threshold(token_limit: int, reserved_summary_tokens: int = _CONTEXT["summary_reserved_tokens"].default,
                           buffer_tokens: int = _CONTEXT["autocompact_buffer_tokens"].default,
                           min_fraction: float = _CONTEXT["min_threshold_fraction"].default) -> int:
    """``limit - reserved - buffer`` (spec 000 M0: 131072 → 98072, 65536 → 32536), never below
    ``min_fraction`` of the window: a small local model's window would otherwise compact every call."""
    formula = effective_context_limit(token_limit, reserved_summary_tokens) - buffer_tokens
    return max(1, formula, int(token_limit * min_fraction))


class ToolResultSettings(_Section):
    """Tool-result budget (spec 000 M2)."""

    grep_max_chars: int = Field(20_000, gt=0, description="grep results above this are persisted")
    shell_max_chars: int = Field(30_000, gt=0, description="shell results above this are persisted")
    default_max_chars: int = Field(50_000, gt=0, description="other tools' results above this are persisted")
    aggregate_max_chars: int = Field(200_000, gt=0, description="all results of one assistant turn, together")
    per_tool_max_chars: dict[str, int] = Field(default_factory=dict, description="tool name → threshold override")
    preview_chars: int = Field(4_000, gt=0, description="size of the preview the model sees")
    artifact_max_bytes: int = Field(64 * 1024 * 1024, gt=0, description="artifact cap; beyond it truncated=true")
    reducers: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="tool name → reducer spec for structured output (keep_last, keep_fields)",
    )
    self_limiting_tools: list[str] = Field(
        default_factory=lambda: ["read_file", "read_tool_result"],
        description="tools that bound their own output; their results are never persisted",
    )


class ReadFileSettings(_Section):
    """read_file's own limits (spec 000 M3)."""

    max_size_bytes: int = Field(256 * 1024, gt=0, description="larger files need offset/limit")
    max_tokens: int = Field(25_000, gt=0, description="larger reads need offset/limit")
    max_window_share: float = Field(
        0.25, gt=0, le=1,
        description="a read (or any tool result) larger than this share of the context window is saved as an "
        "artifact; the model sees a preview and pages it (on a small window the 25K cap alone let one read fill it)",
    )
    default_limit_lines: int = Field(2_000, gt=0, description="lines returned when only offset is given")
    max_line_chars: int = Field(2_000, gt=0, description="longer lines are cut in the output")
    count_lines_max_bytes: int = Field(
        64 * 1024 * 1024, gt=0, description="a paged read counts the file's lines only this far past the page"
    )
    edit_max_bytes: int = Field(
        16 * 1024 * 1024, gt=0, description="edit_file refuses larger files (they are loaded whole to edit)"
    )


class MicrocompactSettings(_Section):
    """Clearing old tool results in the view (spec 000 M7, plus size-triggered clearing)."""

    gap_threshold_minutes: float = Field(60, gt=0, description="idle gap that triggers time-based clearing")
    keep_recent: int = Field(5, ge=0, description="most recent compactable results never cleared")
    compactable_tools: list[str] = Field(
        default_factory=lambda: ["read_file", "grep", "glob", "ls", "edit_file", "write_file", "shell"],
        description="tools whose old results may be cleared",
    )
    size_trigger_fraction: float = Field(
        1.0, gt=0, le=1,
        description="view share of the window that triggers size clearing; at 1.0 only a safety net when "
        "auto compaction is off or failing (earlier clearing cost more under prompt caching on real sessions)",
    )
    size_target_fraction: float = Field(0.25, gt=0, le=1, description="clear down to this share of the window")


class SessionMemorySettings(_Section):
    """Structured session notes used for compaction first (spec 000 M6)."""

    enabled: bool = Field(True, description="keep session memory and use it for auto compaction")
    init_tokens: int = Field(10_000, ge=0, description="first extraction once the context is this large")
    update_min_tokens: int = Field(5_000, ge=0, description="tokens added since last update before another")
    update_min_tool_calls: int = Field(3, ge=0, description="tool calls since last update before another")
    section_max_tokens: int = Field(2_000, gt=0, description="each section's body, at most")
    total_max_tokens: int = Field(12_000, gt=0, description="the whole summary.md, at most")
    min_text_messages: int = Field(5, ge=0, description="text messages kept after a session-memory compact")
    update_input_max_tokens: int = Field(
        40_000, gt=0, description="new conversation shown to the model per update; older overflow is noted extractively"
    )
    compact_wait_seconds: float = Field(15, ge=0, description="a compaction waits this long for a running update")


class MemorySettings(_Section):
    """Static context, rules and long-term memory (spec 001, spec 002)."""

    auto_extract: bool = Field(False, description="propose memories after turns without tool calls")
    index_max_lines: int = Field(200, gt=0, description="MEMORY.md index lines loaded")
    rules_max_chars: int = Field(40_000, gt=0, description="warn when rules together exceed this")
    include_max_depth: int = Field(5, ge=0, description="@path include depth")
    context_file_max_bytes: int = Field(
        256 * 1024, gt=0, description="bytes read of each context file, rule file or @include, at most"
    )
    allow_external_includes: list[str] = Field(
        default_factory=list, max_length=64,
        description="absolute or ~/ globs of files outside the project that @includes may read; "
        "honoured from your own config only, never a project's (/proc, /dev, /sys never)",
    )
    extract_max_facts: int = Field(5, ge=0, description="facts auto-extraction may add after one turn, at most")
    extract_input_max_tokens: int = Field(20_000, gt=0, description="recent conversation shown to memory extraction")


class RecallSettings(_Section):
    """Recall on demand: the per-project search index and the retrieved bucket (spec 003 v1.1)."""

    enabled: bool = Field(True, description="index sessions, artifacts and memory; offer the recall tool")
    index_workspace: bool = Field(False, description="also index the project's files (honouring .gitignore)")
    workspace_max_file_bytes: int = Field(1_000_000, gt=0, description="workspace files larger than this are skipped")
    chunk_lines: int = Field(60, gt=0, description="lines per indexed chunk of a long message, an artifact or a file")
    item_max_chars: int = Field(200_000, gt=0, description="text stored per indexed item, at most")
    default_k: int = Field(5, gt=0, description="hits a recall returns by default")
    snippet_chars: int = Field(300, gt=0, description="characters of each hit's snippet")
    max_query_terms: int = Field(32, gt=0, description="terms of a query searched, at most")
    rrf_k: int = Field(60, gt=0, description="reciprocal-rank fusion constant (hybrid search)")
    embeddings: str | None = Field(None, description="provider:model of an embedding model (openai:…, ollama:…); "
                                   "None = keyword search only")
    retrieved_max_fraction: float = Field(
        0.20, ge=0, le=1, description="the retrieved bucket's share of the window, at most (spec 003: 20%-35%)"
    )
    retrieve_after_compaction: bool = Field(
        True, description="add hits for compacted-away identifiers a new message names"
    )
    retrieve_max_hits: int = Field(3, ge=0, description="hits added to the retrieved bucket per trigger, at most")
    min_confidence: float = Field(
        0.5, ge=0, le=1, description="retrieved hits below this confidence are dropped first over budget"
    )


class ToolsSettings(_Section):
    """The tool catalog as context (docs/tools.md): which tool definitions are sent in full each call."""

    defer: Literal["auto", "always", "never"] = Field(
        "auto", description="defer non-core tool schemas behind tool_search: auto (when all tool definitions "
        "would take more than defer_share of the window), always, or never"
    )
    defer_share: float = Field(0.10, gt=0, le=1, description="share of the window tool definitions may take "
                               "before auto defers the non-core ones (Claude Code: 10%)")
    defer_min_tools: int = Field(10, ge=1, description="auto defers only when at least this many tools could be "
                                 "deferred (a few tools are cheaper sent whole than searched for)")
    core: list[str] = Field(default_factory=list, description="tool names or globs (e.g. mcp__git__*) always sent "
                            "in full; built-in tools always are")
    search_default_k: int = Field(5, gt=0, le=50, description="tools one tool_search returns and loads by default")
    search_max_k: int = Field(20, gt=0, le=200, description="tools one tool_search may return, at most")
    listing_max_tokens: int = Field(2_000, ge=0, description="the deferred-tools listing, at most: past it, names "
                                    "only, grouped by server; then cut (tool_search still finds every tool)")


class SkillsSettings(_Section):
    """Agent Skills (SKILL.md): listed by name and description, the body loaded on demand."""

    enabled: bool = Field(True, description="discover skills and offer the skill tool")
    max_skills: int = Field(100, ge=0, description="skills listed, at most (user skills first)")
    max_file_bytes: int = Field(256 * 1024, gt=0, description="a SKILL.md larger than this is skipped")
    description_max_chars: int = Field(1_024, gt=0, description="a skill's description in the listing, at most")


class TranscriptSettings(_Section):
    fsync: Literal["always", "turn", "never"] = Field("turn", description="when the transcript is fsynced")


class StorageSettings(_Section):
    """Where sessions, artifacts, memory and the audit trail live (files, or PostgreSQL for fleets)."""

    backend: Literal["files", "postgres"] = Field("files", description="files under MTAGENT_HOME, or postgres")
    dsn: str | None = Field(None, description="PostgreSQL connection string when backend = postgres")
    tenant: str = Field("default", description="tenant id written on every row; row-level security keeps tenants apart")
    pool_max_size: int = Field(4, ge=1, description="PostgreSQL connections per process, at most")
    connect_timeout_seconds: float = Field(10, gt=0, description="give up reaching PostgreSQL after this long")


# configured secrets, at most per list: each is searched for in every text that is redacted
REDACT_LIST_MAX = 256
# A secret shorter than this is too likely an ordinary word or number to replace everywhere
# (the redaction layer and this validator share it; it lives here, below both).
MIN_SECRET_CHARS = 8


class SecuritySettings(_Section):
    """Extra secrets to redact (docs/security.md). These lists add up over every config layer
    (home, project, environment, arguments): a later layer can add a redaction, never remove one."""

    redact_values: list[str] = Field(
        default_factory=list, max_length=REDACT_LIST_MAX,
        description="secret values replaced by [redacted] in payloads, transcripts, artifacts and output "
        "(each at least 8 characters)",
    )
    redact_env: list[str] = Field(
        default_factory=list, max_length=REDACT_LIST_MAX,
        description="names of environment variables whose values are secrets, whatever the name looks like",
    )

    @field_validator("redact_values")
    @classmethod
    def _long_enough(cls, values: list[str]) -> list[str]:
        if any(len(v.strip()) < MIN_SECRET_CHARS for v in values):  # never echo the value: it is a secret
            raise ValueError(f"an entry is shorter than {MIN_SECRET_CHARS} characters; a value that short "
                             "would replace ordinary words everywhere")
        return values


class ShellSettings(_Section):
    default_timeout_seconds: float = Field(120, gt=0, description="shell tool timeout when none is given")
    max_timeout_seconds: float = Field(600, gt=0, description="largest timeout the model may ask for")
    max_capture_bytes: int = Field(
        16 * 1024 * 1024, gt=0,
        description="output kept in memory (head + rolling tail), at most; the middle beyond it is dropped",
    )
    kill_grace_seconds: float = Field(2, ge=0, description="after SIGTERM on timeout, wait this long before SIGKILL")
    env_passthrough: list[str] = Field(
        default_factory=list, max_length=256,
        description="secret-named environment variables (redaction's rule: *KEY*, *TOKEN*, *SECRET*, *AUTH*, "
        "*_URL …) commands may see anyway: names or globs (docs/security.md)",
    )


# Secrets a sandboxed command never sees (docs/security.md), relative to the home folder; mtagent's own
# home is hidden too. sandbox.hide_paths adds to it (a layer adds, never removes).
SANDBOX_HIDDEN_HOME_PATHS: tuple[str, ...] = (
    ".ssh", ".aws", ".azure", ".config/gcloud", ".netrc", ".docker/config.json", ".kube", ".gnupg",
    ".git-credentials", ".config/gh", ".config/hub", ".npmrc", ".pypirc", ".cargo/credentials",
    ".cargo/credentials.toml", ".gem/credentials", ".password-store", ".vault-token", ".terraform.d",
    ".config/op", ".local/share/keyrings", ".mozilla", ".config/google-chrome", ".config/chromium",
    ".config/containers/auth.json", ".s3cfg", ".config/rclone", ".oci", ".config/doctl", ".config/git/credentials",
    # shell and REPL histories hold pasted tokens and passwords
    ".bash_history", ".zsh_history", ".local/share/fish", ".python_history", ".psql_history", ".mysql_history",
    ".node_repl_history", ".sqlite_history", ".rediscli_history",
)
# Inside the writable workspace, what must stay read-only: files that make something run *outside* the
# sandbox later (git hooks and config on the user's next commit, the project's own mtagent config).
SANDBOX_PROTECTED_PATHS: tuple[str, ...] = (".git/hooks", ".git/config", ".mtagent", ".envrc", ".vscode", ".idea")


class SandboxSettings(_Section):
    """Commands in a sandbox (docs/security.md): bubblewrap on Linux, the workspace writable, secrets
    hidden, the network off but for allow_hosts. A project's config can hide more, never less; it sets
    the rest only once trusted, and allow_write never."""

    mode: Literal["auto", "on", "off"] = Field(
        "auto", description="auto: sandbox every command where bubblewrap works, else run as before with "
        "one line saying so; on: the same, but a command that cannot be sandboxed is refused; off: never")
    allow_hosts: list[str] = Field(
        default_factory=list, max_length=256,
        description="hosts sandboxed commands may reach through mtagent's proxy: names, *.suffix globs, "
        "IP addresses, optionally :port (e.g. pypi.org, *.pythonhosted.org)")
    hide_paths: list[str] = Field(
        default_factory=list, max_length=256,
        description="more files or folders a sandboxed command cannot see (beside ~/.ssh, ~/.aws, "
        "~/.config/gcloud, ~/.netrc, ~/.kube, ~/.gnupg, $MTAGENT_HOME …); ~ expands")
    allow_write: list[str] = Field(
        default_factory=list, max_length=64,
        description="more folders sandboxed commands may write (your own config only; e.g. ~/.cache/pip)")
    mcp_servers: bool = Field(False, description="also run MCP stdio servers in the sandbox (their own "
                              "folder writable; network through allow_hosts)")


class UiSettings(_Section):
    """The explain UI (``mtagent ui``): a local, read-only web app over the transcripts."""

    host: str = Field("127.0.0.1", description="address to bind; off loopback the printed token is required")
    port: int = Field(8765, ge=0, le=65535, description="port to bind (0 picks a free one)")
    artifact_page_lines: int = Field(2_000, gt=0, description="artifact lines shown per page (raw streams all)")
    search_max_hits: int = Field(200, gt=0, description="artifact and memory search hits shown, at most")
    line_max_chars: int = Field(2_000, gt=0, description="longer artifact lines are cut on the page (not in raw)")
    message_max_chars: int = Field(200_000, gt=0, description="a message longer than this is cut on a call's page")
    stream_chunk_bytes: int = Field(256 * 1024, gt=0, description="bytes per chunk when streaming a raw artifact")


MAX_OUTPUT_WINDOW_SHARE, MAX_OUTPUT_FLOOR_TOKENS, MAX_OUTPUT_CAP_TOKENS = 8, 256, 8_192  # output = window // 8 in bounds
COMPACT_DESCRIPTION_CHARS = 100  # a compact tool schema's description: its first sentence, at most this long
SERVER_WINDOW_MIN, SERVER_WINDOW_MAX = 256, 100_000_000  # a window a server reports outside these is ignored


class AgentSettings(_Section):
    model: str | None = Field(None, description="provider:name, e.g. openai:gpt-4o-mini")
    base_url: str | None = Field(None, description="OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp)")
    compact_model: str | None = Field(None, description="model for hand-off summaries and session memory (default: the session's model; 'extractive': no model call)")
    model_windows: dict[str, int] = Field(default_factory=dict, description="model → context window override")
    approval: dict[str, str] = Field(default_factory=dict, description="tool or 'shell:<glob>' → ask|allow|deny (shell, write_file, edit_file default to ask)")
    max_retries: int = Field(3, ge=0, description="retries on rate limit / 5xx / timeout")
    retry_base_seconds: float = Field(1.0, ge=0, description="first backoff; doubles each retry")
    request_timeout_seconds: float = Field(300, gt=0, description="one model call in total, a stream included")
    max_output_tokens: int | None = Field(None, gt=0, description="output tokens per call; None = window/8, 256–8192")
    server: Literal["auto", "openai", "vllm", "ollama", "llamacpp", "lmstudio"] = Field("auto", description="server kind behind base_url (auto: ask its /v1/models once)")
    model_options: dict[str, dict[str, Any]] = Field(default_factory=dict, description="model → extra request fields")
    tool_schemas: Literal["auto", "full", "compact"] = Field("auto", description="tool schemas sent: full, compact (first sentences, no optional tools), or auto: compact when full ones + the system prompt exceed tool_schema_max_share of the window")
    tool_schema_max_share: float = Field(0.3, gt=0, le=1, description="share of the window the system prompt + tool schemas may take before auto switches to compact")
    compact_drop_tools: list[str] = Field(default_factory=lambda: ["task", "recall", "save_memory"], description="tools not offered in compact tool-schema mode")
    max_steps: int = Field(200, gt=0, description="model calls per user turn, at most")
    workspace_extra_roots: list[str] = Field(default_factory=list, description="more folders tools may touch")
    prices: dict[str, dict[str, float]] = Field(
        default_factory=lambda: {k: dict(v) for k, v in DEFAULT_PRICES.items()},
        description="model (provider:name, bare name or glob) → USD per million tokens: input, output, cache_read, cache_write (for /cost and run --json)",
    )


class SubagentSettings(_Section):
    """Subagents: children with their own context, tools and budget (spec 003 Boundary, v1.3)."""

    enabled: bool = Field(True, description="offer the task tool (explore / review / general children)")
    max_depth: int = Field(1, ge=0, description="levels of children below the main session (1: children cannot spawn)")
    max_parallel: int = Field(3, ge=1, description="children of the whole tree at work at once, at most (a child waiting for its own lends its slot)")
    max_per_turn: int = Field(8, ge=1, description="children one assistant message may start, at most")
    window_tokens: int | None = Field(
        None, gt=0, description="a child's context window when its profile names none; None = the parent's"
    )
    max_steps: int = Field(40, gt=0, description="model calls of one child, at most")
    report_max_tokens: int = Field(2_000, gt=0, description="a report's size in the parent's window, at most")
    repair_attempts: int = Field(1, ge=0, description="requests to fix a report that is not valid JSON of the schema")
    files_max_tokens: int = Field(8_000, ge=0, description="named files handed to a child, tokens in all")
    task_state_max_tokens: int = Field(2_000, ge=0, description="the parent's session notes handed to a child, at most")
    evidence_max_refs: int = Field(20, ge=0, description="evidence references kept per report")
    cancel_wait_seconds: float = Field(5, ge=0, description="after Ctrl-C, wait this long for children to stop")


class McpServerSettings(_Section):
    """One ``[mcp.servers.NAME]`` table: a stdio server (``command``) or a streamable-HTTP one (``url``)."""

    command: str | None = Field(None, description="program to run (stdio transport)")
    args: list[str] = Field(default_factory=list, description="its arguments")
    env: dict[str, str] = Field(default_factory=dict, description="environment passed to it (beside PATH, HOME, "
                                "LOGNAME, SHELL, TERM, USER; nothing else of yours)")
    cwd: str | None = Field(None, description="its working folder: an absolute path (~ expands); a relative one "
                           "names a folder of the project and is honoured only in a trusted project. Default: "
                           "the project for a trusted project's own servers, $MTAGENT_HOME/mcp/NAME for yours")
    url: str | None = Field(None, description="endpoint of a streamable-HTTP server")
    headers: dict[str, str] = Field(default_factory=dict, description="HTTP headers sent to it")
    enabled: bool = Field(True, description="false: configured but never started")
    start_timeout_seconds: float | None = Field(None, gt=0, description="override of mcp.start_timeout_seconds")
    call_timeout_seconds: float | None = Field(None, gt=0, description="override of mcp.call_timeout_seconds")

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSettings:
        if (self.command is None) == (self.url is None):
            raise ValueError("an MCP server needs exactly one of command (stdio) or url (streamable HTTP)")
        return self


class McpSettings(_Section):
    """MCP servers (docs/tools.md). A project's own [mcp] and .mcp.json start nothing until it is trusted."""

    enabled: bool = Field(True, description="use MCP servers at all")
    servers: dict[str, McpServerSettings] = Field(default_factory=dict, description="name → server table "
                                                  "(command, args, env, cwd, or url, headers)")
    project_mcp_json: bool = Field(True, description="read a trusted project's .mcp.json (Claude Code's format)")
    start_timeout_seconds: float = Field(30, gt=0, description="a server not ready after this long is marked failed")
    ready_wait_seconds: float = Field(3, ge=0, description="a session's first request waits this long at most for "
                                      "its servers; the tools of one still starting arrive when it is ready")
    call_timeout_seconds: float = Field(300, gt=0, description="one MCP tool call, at most")
    description_max_chars: int = Field(2_048, gt=0, description="a server's tool description is cut to this "
                                       "(untrusted text)")
    instructions_max_chars: int = Field(4_096, gt=0, description="a server's instructions are cut to this")
    schema_max_chars: int = Field(16_384, gt=0, description="a tool's input schema larger than this is replaced "
                                  "by a plain object schema")
    max_tools_per_server: int = Field(512, gt=0, description="tools taken from one server, at most")
