"""ToolCatalog: every tool a session has, what of it is sent each call, and what a load costs.

One catalog per session holds the built-in tools, the MCP tools (``mcp__<server>__<tool>``) and the
skills' listing. Each call it answers three questions:

* **what to bind** — :meth:`ToolCatalog.bound`: core tools (built-ins and ``tools.core``), then,
  when deferring, ``tool_search``, then every tool loaded so far *in load order*. A load only ever
  appends, so the definitions already sent stay the cached prefix (:mod:`.cost` prices the rest).
  Built-in schemas are shaped by :mod:`.schemas` (full, or compact in a small window) as before.
* **what the tools take** — :meth:`ToolCatalog.tokens`: an ``int`` that also carries its split into
  the ``tools`` (built-in) and ``mcp_tools`` buckets, so ``/context`` shows both.
* **what the model is told** — :mod:`.listing`: the deferred tools by name and one line each, the
  skills, MCP servers' instructions, and after a compaction a delta of what was loaded.

Deferral (``tools.defer``): ``auto`` defers when all tool definitions would take more than
``tools.defer_share`` of the window; ``always``; ``never``. Only non-core tools are ever deferred.
"""

from __future__ import annotations

import fnmatch
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.tools import BaseTool

from mtagent.config import Settings
from mtagent.context.compaction.trigger import Prices
from mtagent.context.toolset.cost import LoadCost, LoadStats, load_cost
from mtagent.context.toolset.entries import BUILTIN, ToolEntry, entry_for, one_line
from mtagent.context.toolset.schemas import SchemaChoice, choose_schemas, compact_schema, schema_tokens
from mtagent.context.toolset.search import SearchHit, ToolSearchIndex
from mtagent.context.recall.vectors import Embeddings

TOOL_SEARCH = "tool_search"
TOOLS_BUCKET, MCP_TOOLS_BUCKET = "tools", "mcp_tools"
SystemTokens = Callable[[Sequence[Any], str], int]


def tool_search_schema(default_k: int, max_k: int) -> dict[str, Any]:
    """The ``tool_search`` function schema (the LangChain tool in ``tools/tool_search.py`` matches it)."""
    return {"type": "function", "function": {
        "name": TOOL_SEARCH,
        "description": ("Find and load deferred tools (listed by name in <deferred-tools>). Query with words "
                        "for what you need, or 'select:name1,name2' for exact names. The tools found are "
                        "loaded: call them directly from your next step."),
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string", "description": "what the tool should do, or select:<names>"},
            "k": {"type": "integer", "minimum": 1, "maximum": max_k,
                  "description": f"tools to return and load (default {default_k})"},
        }, "required": ["query"]},
    }}


def _schema_set(tools: Sequence[Any], settings: Settings, window: int, drop: Iterable[str],
                system_tokens: SystemTokens | None) -> tuple[list[Any], SchemaChoice]:
    """Full or compact schemas (:func:`.schemas.choose_schemas`) by the session's ``agent`` settings."""
    agent = settings.agent
    return choose_schemas(tools, window=window, setting=agent.tool_schemas, max_share=agent.tool_schema_max_share,
                          drop=drop, encoding=settings.context.encoding,
                          system_tokens=system_tokens or (lambda _tools, _mode: 0))


class ToolTokens(int):
    """Tokens of the bound tool definitions, an ``int`` that also knows its buckets
    (``tools`` for built-in, ``mcp_tools`` for MCP schemas; ``tool_search`` counts as built-in)."""

    buckets: dict[str, int]

    def __new__(cls, buckets: Mapping[str, int]) -> ToolTokens:
        value = super().__new__(cls, sum(buckets.values()))
        value.buckets = {k: v for k, v in buckets.items() if v}
        return value


@dataclass(slots=True, frozen=True)
class Deferral:
    """Whether this session defers, and why (``/context`` and ``mtagent tools list`` show it)."""

    deferring: bool
    setting: str
    window: int
    share: float
    all_tokens: int  # every tool definition in full
    deferred: int  # tools not sent in full
    candidates: int = 0  # tools that could be deferred (not core)
    min_tools: int = 0  # tools.defer_min_tools

    @property
    def reason(self) -> str:
        if self.setting != "auto":
            return f"tools.defer = {self.setting}"
        if not self.deferring and self.candidates < self.min_tools:
            return f"{self.candidates} tools could be deferred (< tools.defer_min_tools {self.min_tools})"
        pct = self.all_tokens / self.window if self.window else 0.0
        cmp = ">" if self.deferring else "<="
        return f"all tool definitions would take {pct:.1%} of the window ({cmp} tools.defer_share {self.share:.0%})"

    def to_dict(self) -> dict[str, Any]:
        return {"deferring": self.deferring, "setting": self.setting, "window": self.window, "share": self.share,
                "all_tokens": self.all_tokens, "deferred": self.deferred, "reason": self.reason}


@dataclass(slots=True, frozen=True)
class LoadReport:
    added: tuple[str, ...]
    already: tuple[str, ...]
    cost: LoadCost


@dataclass
class ToolCatalog:
    """See the module docstring. Build with :meth:`build`; thread-safe for parallel tool calls."""

    entries: list[ToolEntry]
    settings: Settings
    window: int
    schema_choice: SchemaChoice
    core_bound: list[Any]
    deferral: Deferral
    embeddings: Embeddings | None = None
    loaded: list[str] = field(default_factory=list)
    stats: LoadStats = field(default_factory=LoadStats)
    version: int = 0  # bumps on every load
    _index: ToolSearchIndex | None = None
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _by_name: dict[str, ToolEntry] = field(default_factory=dict)
    _requests: dict[tuple[Any, ...], tuple[list[Any], SchemaChoice]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._by_name = {e.name: e for e in self.entries}

    @classmethod
    def build(cls, tools: Iterable[Any], settings: Settings, *, window: int | None = None,
              system_tokens: SystemTokens | None = None, embeddings: Embeddings | None = None,
              drop: Iterable[str] | None = None, builtin_core: bool = True) -> ToolCatalog:
        """The catalog of ``tools`` (``BaseTool`` s or OpenAI dicts; MCP tools by their names).

        ``system_tokens(tools, mode)`` counts the system prompt that goes with a built-in schema set
        (see :func:`.schemas.choose_schemas`); ``drop``: tools left out of the compact set
        (default ``agent.compact_drop_tools``); ``builtin_core=False``: tools that are not MCP tools are
        deferrable too (a ``create_agent``'s own tools: only ``tools.core`` names them core).
        """
        entries = [entry_for(t, encoding=settings.context.encoding) for t in tools]
        if not builtin_core:
            for e in entries:
                e.core = False
        seen: set[str] = set()
        entries = [e for e in entries if not (e.name in seen or seen.add(e.name))]  # first of a name wins
        core_globs = settings.tools.core
        for e in entries:
            if not e.core and any(fnmatch.fnmatchcase(e.name, g) for g in core_globs):
                e.core = True
        win = window or settings.context.token_limit
        tcfg = settings.tools
        all_tokens = sum(e.tokens for e in entries)
        noncore = [e for e in entries if not e.core]
        deferring = bool(noncore) and (tcfg.defer == "always" or (
            tcfg.defer == "auto" and len(noncore) >= tcfg.defer_min_tools and all_tokens > tcfg.defer_share * win))
        sent = [e for e in entries if e.core or not deferring]
        core_bound, choice = _schema_set([e.tool if e.tool is not None else e.schema for e in sent], settings, win,
                                         settings.agent.compact_drop_tools if drop is None else drop, system_tokens)
        deferral = Deferral(deferring, tcfg.defer, win, tcfg.defer_share, all_tokens, len(noncore) if deferring else 0,
                            len(noncore), tcfg.defer_min_tools)
        catalog = cls(entries, settings, win, choice, core_bound, deferral, embeddings)
        if deferring:
            catalog.core_bound.append(tool_search_schema(tcfg.search_default_k, tcfg.search_max_k))
        return catalog

    # ── what is sent ──

    @property
    def by_name(self) -> dict[str, ToolEntry]:
        return self._by_name

    def state(self, name: str) -> str:
        """``loaded`` (its schema is sent), ``deferred`` (listed by name), or ``dropped`` (compact set)."""
        if name in self.loaded or (name in self.schema_choice.offered):
            return "loaded"
        entry = self.by_name.get(name)
        if entry is not None and self.deferral.deferring and not entry.core:
            return "deferred"
        return "dropped"

    def deferred(self) -> list[ToolEntry]:
        """Tools listed by name only, in catalog order."""
        with self._lock:
            return [e for e in self.entries if self.state(e.name) == "deferred"]

    def _shaped(self, entry: ToolEntry) -> Any:
        if self.schema_choice.mode == "compact":
            return compact_schema(entry.tool if entry.tool is not None else entry.schema)
        return entry.tool if entry.tool is not None else entry.schema

    def bound(self) -> list[Any]:
        """What to bind this call: core (and tool_search), then loaded tools in load order."""
        with self._lock:
            by_name = self.by_name
            return [*self.core_bound, *(self._shaped(by_name[n]) for n in self.loaded)]

    def request_schemas(self, tools: Sequence[Any], system_tokens: int) -> tuple[list[Any], SchemaChoice]:
        """A request's ``tools`` as the catalog's own rule would send them, for a front end that does not
        bind its tools (the middleware: ``create_agent`` binds the caller's): compact copies of the
        ``BaseTool`` s in a small window (none dropped), the rest as they are; chosen once per tool set
        and system prompt size (``system_tokens``)."""
        own = [t for t in tools if isinstance(t, BaseTool)]
        key = (tuple(t.name for t in own), len(tools), system_tokens)
        with self._lock:
            if key not in self._requests:
                sent, choice = _schema_set(own, self.settings, self.window, (), lambda _tools, _mode: system_tokens)
                compact = iter(sent)
                self._requests[key] = ([next(compact) if isinstance(t, BaseTool) else t for t in tools], choice)
            chosen, choice = self._requests[key]
        return list(chosen), choice

    @property
    def encoding(self) -> str:
        """The session's token encoding (``context.encoding``): schemas are counted in it, like messages."""
        return self.settings.context.encoding

    def tokens(self) -> ToolTokens:
        """Tokens of :meth:`bound`, split into built-in and MCP buckets."""
        with self._lock:
            buckets = {TOOLS_BUCKET: 0, MCP_TOOLS_BUCKET: 0}
            by_name = self.by_name
            for item in self.bound():
                schema = item if isinstance(item, dict) else self._schema_of(item)
                name = str(schema.get("function", {}).get("name", ""))
                entry = by_name.get(name)
                bucket = MCP_TOOLS_BUCKET if entry is not None and entry.is_mcp else TOOLS_BUCKET
                buckets[bucket] += schema_tokens([schema], self.encoding)
            return ToolTokens(buckets)

    def _schema_of(self, tool: Any) -> dict[str, Any]:
        name = getattr(tool, "name", None)
        entry = self.by_name.get(str(name)) if name else None
        return entry.schema if entry is not None else entry_for(tool, encoding=self.encoding).schema

    def runnable(self, name: str) -> Any:
        """The tool object to run for ``name`` (deferred ones too: calling one loads it), or None."""
        entry = self.by_name.get(name)
        return entry.tool if entry is not None else None

    # ── search and load ──

    def search(self, query: str, k: int | None = None) -> list[SearchHit]:
        """``tool_search`` over the deferred tools (all non-core tools when nothing is deferred)."""
        tcfg = self.settings.tools
        want = min(max(1, int(k or tcfg.search_default_k)), tcfg.search_max_k)
        with self._lock:
            if self._index is None:
                pool = [e for e in self.entries if not e.core] or list(self.entries)
                self._index = ToolSearchIndex(pool, embeddings=self.embeddings,
                                              rrf_k=self.settings.recall.rrf_k)
            index = self._index
        return index.search(query, want)

    def load(self, names: Iterable[str], *, after_tokens: int = 0) -> LoadReport:
        """Bind the schemas of ``names`` for the rest of the session (appended, once each).

        ``after_tokens``: the last request's tokens behind the tool definitions — what the changed
        prefix makes the provider write again (priced and counted in :attr:`stats`).
        """
        with self._lock:
            by_name = self.by_name
            added, already = [], []
            for name in dict.fromkeys(names):
                if name not in by_name or self.state(name) != "deferred":
                    already.append(name)
                    continue
                self.loaded.append(name)
                added.append(name)
            tokens = schema_tokens([self._schema_of_shaped(by_name[n]) for n in added], self.encoding)
            cost = load_cost(after_tokens if added else 0, tokens, Prices.from_settings(self.settings))
            if added:
                self.stats.add(len(added), cost)
                self.version += 1
            return LoadReport(tuple(added), tuple(already), cost)

    def restore(self, names: Iterable[str]) -> list[str]:
        """Loads a resumed session made before (from its ``tools_loaded`` events): bound again in their
        order, not counted or priced again. Unknown or core names are ignored."""
        with self._lock:
            added = [n for n in dict.fromkeys(names) if n in self._by_name and self.state(n) == "deferred"]
            self.loaded.extend(added)
            if added:
                self.version += 1
            return added

    def _schema_of_shaped(self, entry: ToolEntry) -> dict[str, Any]:
        shaped = self._shaped(entry)
        return shaped if isinstance(shaped, dict) else entry.schema

    def add(self, tools: Iterable[Any], *, after_tokens: int = 0) -> list[str]:
        """Tools that arrived after the session opened (an MCP server that connected late). Deferred
        when the catalog defers, else loaded at once (appended, priced like a load). Returns their names."""
        with self._lock:
            fresh = [e for e in (entry_for(t, encoding=self.encoding) for t in tools) if e.name not in self._by_name]
            for e in fresh:
                e.core = False
                self.entries.append(e)
                self._by_name[e.name] = e
            self._index = None
            names = [e.name for e in fresh]
        if fresh and not self.deferral.deferring:
            with self._lock:
                self.loaded.extend(names)
                self.version += 1
                fresh_tokens = schema_tokens([self._schema_of_shaped(e) for e in fresh], self.encoding)
                cost = load_cost(after_tokens, fresh_tokens, Prices.from_settings(self.settings))
                self.stats.add(len(fresh), cost)
        return names

    def rows(self) -> list[dict[str, Any]]:
        """Every tool: name, source, schema tokens (as sent when loaded), state (``mtagent tools list``);
        ``tool_search`` too when it is offered."""
        with self._lock:
            rows = [{"name": e.name, "source": e.source or BUILTIN, "state": self.state(e.name), "core": e.core,
                     "tokens": schema_tokens([self._schema_of_shaped(e)], self.encoding)
                     if self.state(e.name) == "loaded" else e.tokens, "description": e.listing} for e in self.entries]
            if self.deferral.deferring:
                search = self.core_bound[-1] if self.core_bound else {}
                rows.append({"name": TOOL_SEARCH, "source": BUILTIN, "state": "loaded", "core": True,
                             "tokens": schema_tokens([search], self.encoding), "description": one_line(
                                 str(search.get("function", {}).get("description", "")))})
            return rows
