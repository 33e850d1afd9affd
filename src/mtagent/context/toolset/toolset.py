"""Toolset: one session's tool catalog, skills and their context messages — what an opener builds.

A front end (the CLI's session, the LangChain middleware, a subagent child) opens one per session
with :meth:`Toolset.open` and then, per model call:

* sends :meth:`bound` with each request (a load appends schemas, from the next request on),
* passes :meth:`tokens` as the call's ``tools_tokens`` (built-in and MCP buckets apart),
* adds :meth:`messages` right after its system prompt (listings, instructions, deltas),
* passes the session's compaction count to :meth:`caught_up` as it builds the request (a compaction
  since the last one brings the post-compaction delta: read then, not told by a listener),

and runs the ``tool_search`` and ``skill`` tools (``tools/tool_search.py``, ``tools/skill_tool.py``)
through :meth:`run_search` and :meth:`run_skill`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from mtagent.config import Settings
from mtagent.context.recall.vectors import Embeddings
from mtagent.context.tokens import count_text_tokens
from mtagent.context.toolset.catalog import SystemTokens, ToolCatalog, ToolTokens
from mtagent.context.toolset.entries import SKILL
from mtagent.context.toolset.listing import SKILL_TOOL, ToolsetContext
from mtagent.context.toolset.search import SearchHit
from mtagent.context.toolset.skills import Discovery, SkillBook, discover

AfterTokens = Callable[[], int]
TOOLS_LOADED = "tools_loaded"  # the transcript event of a load: names, tokens, cache cost


def skill_schema() -> dict[str, Any]:
    """The ``skill`` function schema (the LangChain tool in ``tools/skill_tool.py`` matches it)."""
    return {"type": "function", "function": {
        "name": SKILL_TOOL,
        "description": ("Load a skill's instructions by name (the skills are listed in <skills>); with file, "
                        "read a file the skill bundles."),
        "parameters": {"type": "object", "properties": {
            "name": {"type": "string", "description": "the skill's name, as listed"},
            "file": {"type": "string", "description": "a path relative to the skill's folder"}},
            "required": ["name"]},
    }}


@dataclass
class Toolset:
    """See the module docstring."""

    catalog: ToolCatalog
    skills: SkillBook
    context: ToolsetContext
    after_tokens: AfterTokens = lambda: 0  # the last request's tokens behind the tool definitions
    compactions_seen: int | None = None  # the session's compaction count at the last request built
    record: Callable[..., None] | None = None  # writes ``tools_loaded`` events to the session's transcript

    def loaded(self, names: Iterable[str]) -> None:
        """Record a load as it happens (a resume binds it again: ``binding.restore_loads``)."""
        if self.record is not None and names:
            self.record(TOOLS_LOADED, names=list(names), **self.catalog.stats.to_dict())

    @classmethod
    def open(cls, tools: Iterable[Any], settings: Settings, *, project_root: Path | None, window: int | None = None,
             system_tokens: SystemTokens | None = None, embeddings: Embeddings | None = None,
             instructions: Mapping[str, str] | None = None, trusted: bool | None = None,
             home: Path | None = None, drop: Iterable[str] | None = None, builtin_core: bool = True,
             skills: bool = True) -> Toolset:
        """The toolset of a session: ``tools`` are built-in and MCP tools (``BaseTool`` s or schema
        dicts); skills are discovered here (project skills only when ``trusted``, default: asked of
        :mod:`mtagent.trust`; ``skills=False``: none, for a front end that cannot run the ``skill`` tool);
        ``instructions`` are MCP servers' instructions by server name."""
        found = discover(project_root, settings.skills, home=home, trusted=trusted) if skills else Discovery()
        book = SkillBook(found, settings.skills)
        given = list(tools)
        if book.skills and not any(getattr(t, "name", None) == SKILL_TOOL for t in given):
            given.append(skill_schema())
        catalog = ToolCatalog.build(given, settings, window=window, system_tokens=system_tokens,
                                    embeddings=embeddings, drop=drop, builtin_core=builtin_core)
        return cls(catalog, book, ToolsetContext(catalog, book, dict(instructions or {})))

    def bound(self) -> list[Any]:
        return self.catalog.bound()

    def tokens(self) -> ToolTokens:
        return self.catalog.tokens()

    def messages(self) -> list[BaseMessage]:
        return self.context.messages()

    def compacted(self) -> None:
        """Fold the listing, note the loads; a resume reads from the boundary on, so they are carried."""
        self.context.compacted()
        if self.record is not None and self.catalog.loaded:
            self.record(TOOLS_LOADED, names=list(self.catalog.loaded), carried=True)

    def caught_up(self, compactions: int) -> bool:
        """Read as a request is built: ``compactions`` (the session's count, any trigger) past the last
        count seen means the history was compacted since — :meth:`compacted` now. True when it was."""
        with self.catalog._lock:  # noqa: SLF001 - once per compaction, whichever thread reads first (notes model)
            seen, self.compactions_seen = self.compactions_seen, compactions
            if seen is None or compactions <= seen:
                return False
            self.compacted()
            return True

    # ── the tools' bodies ──

    def search(self, query: str, k: int | None = None) -> list[SearchHit]:
        return self.catalog.search(query, k)

    def run_search(self, query: str, k: int | None = None) -> str:
        """``tool_search``: find, load what was found (one prefix change for all), and say so."""
        hits = self.catalog.search(query, k)
        if not hits:
            deferred = len(self.catalog.deferred())
            return (f"No deferred tool matches {query[:200]!r} ({deferred} deferred tools). Try other words for "
                    "what the tool does, or select:<name> with a name from <deferred-tools>.")
        report = self.catalog.load([h.name for h in hits], after_tokens=self.after_tokens())
        self.loaded(report.added)
        lines = [f"- {h.name} ({h.source}): {h.description}" for h in hits]
        loaded = f"Loaded {len(report.added)} tool(s); call them directly from your next step."
        if report.already and not report.added:
            loaded = "These tools were already loaded; call them directly."
        return f"{loaded}\n" + "\n".join(lines)

    def load_called(self, name: str) -> bool:
        """A deferred tool was called by name without a search: load it too (its schema is bound from the
        next call, so the model calls it with the real parameters). True when it was loaded now."""
        if not self.catalog.deferral.deferring or self.catalog.state(name) != "deferred":
            return False
        added = self.catalog.load([name], after_tokens=self.after_tokens()).added
        self.loaded(added)
        return bool(added)

    def run_skill(self, name: str, file: str | None = None) -> str:
        """``skill``: the body of a skill (pinned until the next compaction), a file it bundles, or a usable error."""
        try:
            return self.skills.read_file(name, file) if file else self.skills.load(name)
        except KeyError:
            if str(name) in self.skills.discovery.untrusted:
                return (f"Error: skill {str(name)[:80]!r} is this project's, and the project is not trusted (or changed "
                        "since it was), so it was not loaded; the user can run `mtagent trust` to use it.")
            known = ", ".join(s.name for s in self.skills.skills) or "none"
            return f"Error: no skill named {str(name)[:80]!r}. Skills: {known}."
        except (OSError, ValueError) as exc:
            return f"Error: skill {str(name)[:80]!r} can no longer be read safely ({exc}); it was not loaded."

    # ── what users see ──

    def rows(self) -> list[dict[str, Any]]:
        """Every tool and skill: name, source, tokens, state (``mtagent tools list``)."""
        rows = self.catalog.rows()
        for skill in self.skills.skills:
            line = f"- {skill.name}: {skill.description}"
            tokens = count_text_tokens(line, self.catalog.encoding)
            rows.append({"name": skill.name, "source": SKILL, "tokens": tokens,
                         "state": self.skills.state(skill.name), "core": False, "description": skill.description})
        return rows

    def summary(self) -> dict[str, Any]:
        """Totals for ``mtagent tools list`` and ``/context``: what the next request's tool context takes."""
        tokens = self.tokens()
        by_bucket: dict[str, int] = dict(tokens.buckets)
        for message in self.messages():
            bucket = str(message.response_metadata["mtagent"]["bucket"])
            by_bucket[bucket] = by_bucket.get(bucket, 0) + count_text_tokens(str(message.content),
                                                                             self.catalog.encoding)
        return {"definition_tokens": int(tokens), "context_tokens": sum(by_bucket.values()), "buckets": by_bucket,
                "deferral": self.catalog.deferral.to_dict(), "loads": self.catalog.stats.to_dict(),
                "skipped_skills": list(self.skills.discovery.skipped)}


def describe(toolset: Toolset) -> str:
    """One line for ``/context``: what is sent, what is deferred, skills, loads and their cache cost."""
    summary = toolset.summary()
    buckets = summary["buckets"]
    catalog = toolset.catalog
    sent = [b for b in ("tools", "mcp_tools") if buckets.get(b)]
    parts = [f"tool catalog: {len(catalog.entries)} tools, {summary['definition_tokens']:,} definition tokens sent"
             + (f" ({', '.join(f'{b} {buckets[b]:,}' for b in sent)})" if sent else "")]
    if catalog.deferral.deferring:
        parts.append(f"{len(catalog.deferred())} deferred behind tool_search (listing {buckets.get('deferred_tools', 0):,} "
                     f"tokens; {catalog.deferral.reason})")
    if toolset.skills.skills:
        parts.append(f"{len(toolset.skills.skills)} skills ({buckets.get('skills', 0):,} tokens, "
                     f"{len(toolset.skills.pinned)} loaded)")
    if buckets.get("mcp_instructions"):
        parts.append(f"MCP server instructions {buckets['mcp_instructions']:,} tokens")
    loads = catalog.stats
    if loads.loads:
        parts.append(f"{loads.tools_loaded} loaded in {loads.loads} searches ({loads.cache_invalidations} cache "
                     f"invalidations, ≈{loads.cache_cost:,.0f} input-token equivalents)")
    return "; ".join(parts)

