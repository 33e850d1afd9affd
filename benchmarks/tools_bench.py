"""Tools as context: definition tokens with 10–500 MCP tools, tool_search accuracy, the cache cost of loads.

    python benchmarks/tools_bench.py [--quick]

1. **Tokens per request.** A real MCP server (``tools_mcp_server.py``, the SDK's MCPServer over
   stdio, started through mtagent's own MCP client) serves the first N tools of the catalog in
   ``tools_catalog.py``; the session's tool catalog holds them beside the built-in tools. For each N
   it reports the tool-definition tokens of the next request with deferral off (``tools.defer =
   never``) and on (``auto``, window 131,072), plus the deferred listing and server instructions
   the model reads instead (their own buckets). Falls back to an in-process catalog — and says so —
   only when the ``mcp`` SDK is missing.
2. **tool_search accuracy.** 96 paraphrased queries (two per hand-written tool modelled on public
   MCP servers; see ``tools_catalog.py``), 48 held-out ones (written before the search's synonym
   lexicon and never used to tune it) and 96 held-out ordinary user requests (``tools_requests.py``:
   whole sentences as people type them, written before #38's tuning and never tuned on) against
   the 500-tool catalog as served: top-1 and top-5 (no embedding model offline).
3. **The cost of a load.** A load appends schemas after the cached tool prefix; everything behind
   them is written again. Priced with the engine's ratios (read 0.1, write 1.25) at three context
   sizes, against what sending all 500 schemas costs per call, and a simulated 40-call session with
   4 searches: invalidations counted, total input cost with and without deferral.

``--quick`` measures N = 10, 50, 500 and the same queries (well under a minute). Writes
``benchmarks/results/tools_bench[_quick].md`` and ends with RESULT lines.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from results_file import results_file
from tools_catalog import catalog, held_out, queries
from tools_requests import requests

HERE = Path(__file__).resolve().parent
WINDOW = 131_072
SIZES = (10, 50, 200, 500)
QUICK_SIZES = (10, 50, 500)
SERVER = "gen"


def served_tools(n: int) -> tuple[list[Any], dict[str, str], str, Any]:
    """The N tools as mtagent's MCP client gets them from the real server (and the manager to close)."""
    from mtagent.config import Settings
    from mtagent.tools.mcp import McpManager

    settings = Settings.model_validate({"mcp": {"servers": {SERVER: {
        "command": sys.executable, "args": [str(HERE / "tools_mcp_server.py"), str(n)]}}}})
    manager = McpManager.for_project(settings, Path(tempfile.mkdtemp()))
    tools = manager.tools()
    if len(tools) != n:
        manager.close()
        raise RuntimeError(f"the MCP server served {len(tools)} tools, expected {n}: {manager.servers()}")
    return tools, manager.instructions(), "mcp", manager


def in_process_tools(n: int) -> tuple[list[Any], dict[str, str], str, Any]:
    """The same catalog as OpenAI schema dicts (no MCP SDK): names and descriptions as the server's."""
    tools = []
    for t in catalog(n):
        docs = "; ".join(f"{name}: {text}" for name, text in t.params)
        tools.append({"type": "function", "function": {
            "name": f"mcp__{SERVER}__{t.server}_{t.name}",
            "description": t.description + (f" Parameters — {docs}." if docs else ""),
            "parameters": {"type": "object", "properties": {p: {"type": "string", "title": p.title()}
                                                            for p, _ in t.params},
                           "required": [p for p, _ in t.params]}}})
    return tools, {}, "in-process (mcp SDK missing)", None


def load_tools(n: int) -> tuple[list[Any], dict[str, str], str, Any]:
    try:
        import mcp  # noqa: F401
    except ImportError:
        return in_process_tools(n)
    return served_tools(n)


def toolset_for(tools: list[Any], instructions: dict[str, str], defer: str, root: Path) -> Any:
    from mtagent.config import Settings
    from mtagent.context.toolset import Toolset
    from mtagent.tools import default_tools

    settings = Settings.model_validate({"tools": {"defer": defer}, "context": {"token_limit": WINDOW}})
    return Toolset.open([*default_tools(root, settings=settings), *tools], settings, project_root=root,
                        window=WINDOW, instructions=instructions, trusted=False)


def measure_tokens(sizes: tuple[int, ...], root: Path) -> tuple[list[dict[str, Any]], Any, str]:
    rows, biggest, how = [], None, ""
    for n in sizes:
        started = time.perf_counter()
        tools, instructions, how, manager = load_tools(n)
        try:
            off = toolset_for(tools, instructions, "never", root).summary()
            on_toolset = toolset_for(tools, instructions, "auto", root)
            on = on_toolset.summary()
        finally:
            if manager is not None:
                manager.close()
        rows.append({"n": n, "off": off["definition_tokens"], "on": on["definition_tokens"],
                     "listing": on["buckets"].get("deferred_tools", 0),
                     "instructions": on["buckets"].get("mcp_instructions", 0),
                     "on_context": on["context_tokens"], "deferring": on["deferral"]["deferring"],
                     "seconds": time.perf_counter() - started})
        if n == max(sizes):
            biggest = on_toolset
    return rows, biggest, how


def measure_search(toolset: Any, cases: list[tuple[str, str]]) -> dict[str, Any]:
    """top-1 / top-5 of ``cases`` (query, expected ``mcp__<server>__<tool>`` of the catalog)."""
    prefix = f"mcp__{SERVER}__"
    top1 = top5 = 0
    misses = []
    for query, expected in cases:
        want = prefix + expected[len("mcp__"):].replace("__", "_", 1)
        names = [h.name for h in toolset.search(query, 5)]
        top1 += bool(names) and names[0] == want
        top5 += want in names
        if want not in names:
            misses.append((query, want, names[:3]))
    return {"queries": len(cases), "top1": top1 / len(cases), "top5": top5 / len(cases), "misses": misses,
            "pool": len(toolset.catalog.deferred())}


def measure_load_cost(toolset: Any) -> dict[str, Any]:
    """Prices of one search's load at three context sizes, and a simulated 40-call session."""
    from mtagent.config import Settings
    from mtagent.context.compaction.trigger import Prices
    from mtagent.context.toolset.cost import load_cost

    prices = Prices.from_settings(Settings())
    summary = toolset.summary()
    catalog_ = toolset.catalog
    all_defs = catalog_.deferral.all_tokens
    sent_defs = summary["definition_tokens"]
    listing = summary["context_tokens"] - sent_defs
    one_search_tokens = sum(catalog_.by_name[h.name].tokens for h in catalog_.search("create an issue", 5))
    costs = {after: load_cost(after, one_search_tokens, prices).cost for after in (5_000, 20_000, 60_000)}
    saving_per_call = (all_defs - sent_defs - listing) * prices.read  # cached reads no longer paid each call
    # a 40-call session growing 1,500 tokens a call from a 3,000-token system prompt; searches at calls 5, 12, 20, 31
    calls, growth, system, searches = 40, 1_500, 3_000, (5, 12, 20, 31)
    query_words = ("post a chat message", "create a refund", "list pods in staging", "search the web")
    base = deferred = 0.0
    loaded_defs = 0
    invalidations_before = catalog_.stats.cache_invalidations
    for call in range(calls):
        behind = system + growth * call  # everything after the tool definitions
        new = growth if call else behind  # written this call (first call: all of it)
        base += (all_defs if call == 0 else 0) * prices.write + (all_defs if call else 0) * prices.read
        base += new * prices.write + (behind - new) * prices.read
        fixed = sent_defs + listing + loaded_defs
        deferred += (fixed if call == 0 else 0) * prices.write + (fixed if call else 0) * prices.read
        deferred += new * prices.write + (behind - new) * prices.read
        if call in searches:
            hits = toolset.search(query_words[searches.index(call)], 5)
            report = catalog_.load([h.name for h in hits], after_tokens=behind)
            deferred += report.cost.cost
            loaded_defs += report.cost.added_tokens
    return {"one_search_tokens": one_search_tokens, "costs": costs, "saving_per_call": saving_per_call,
            "repay_calls_20k": costs[20_000] / saving_per_call if saving_per_call else float("inf"),
            "session_base": base, "session_deferred": deferred,
            "invalidations": catalog_.stats.cache_invalidations - invalidations_before,
            "loads_cost": catalog_.stats.cache_cost}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 10, 50, 500 only")
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["MTAGENT_HOME"] = str(Path(tmp) / "home")
        root = Path(tmp) / "project"
        root.mkdir()
        rows, biggest, how = measure_tokens(QUICK_SIZES if args.quick else SIZES, root)
        search = measure_search(biggest, queries())
        held = measure_search(biggest, held_out())
        asked = measure_search(biggest, requests())
        cost = measure_load_cost(biggest)
    out: list[str] = []
    out.append(f"Catalog served by: {how}; built-in tools included; window {WINDOW:,}")
    out.append(f"{'tools':>6} {'defs off':>9} {'defs on':>8} {'listing':>8} {'instr':>6} {'on total':>9} {'s':>5}")
    for r in rows:
        out.append(f"{r['n']:>6} {r['off']:>9,} {r['on']:>8,} {r['listing']:>8,} {r['instructions']:>6,} "
              f"{r['on_context']:>9,} {r['seconds']:>5.1f}{'' if r['deferring'] else '  (not deferred: under 10%)'}")
    for label, result in (("paraphrased (dev set)", search), ("held-out", held),
                          ("held-out ordinary requests (tools_requests.py, never tuned on)", asked)):
        out.append(f"tool_search over {result['pool']} deferred tools, {result['queries']} {label} queries: "
              f"top-1 {result['top1']:.3f}, top-5 {result['top5']:.3f}")
        for query, want, got in result["misses"]:
            out.append(f"  miss: {query!r} → wanted {want}, got {got}")
    out.append(f"One search loads {cost['one_search_tokens']:,} schema tokens; its cache cost "
          + ", ".join(f"{c:,.0f} at {a:,} tokens behind" for a, c in cost["costs"].items())
          + f" (input-token equivalents); deferral saves {cost['saving_per_call']:,.0f} per call, so a load at "
          f"20K repays in {cost['repay_calls_20k']:.1f} calls")
    out.append(f"40-call session, 4 searches: {cost['invalidations']} cache invalidations; input cost "
          f"{cost['session_deferred']:,.0f} deferred vs {cost['session_base']:,.0f} all schemas sent")
    report = "\n".join(out)
    print(report)
    results_file(f"tools_bench{'_quick' if args.quick else ''}.md").write_text(
        f"# tools_bench{' --quick' if args.quick else ''}\n\n```\n{report}\n```\n", encoding="utf-8")
    for r in rows:
        print(f"RESULT tool_def_tokens_{r['n']}_off={r['off']}")
        print(f"RESULT tool_def_tokens_{r['n']}_on={r['on']}")
        print(f"RESULT tool_context_tokens_{r['n']}_on={r['on_context']}")
    print(f"RESULT tool_search_top1={search['top1']:.4f}")
    print(f"RESULT tool_search_top5={search['top5']:.4f}")
    print(f"RESULT tool_search_heldout_top1={held['top1']:.4f}")
    print(f"RESULT tool_search_heldout_top5={held['top5']:.4f}")
    print(f"RESULT tool_search_requests_top1={asked['top1']:.4f}")
    print(f"RESULT tool_search_requests_top5={asked['top5']:.4f}")
    print(f"RESULT load_cache_cost_20k={cost['costs'][20_000]:.0f}")
    print(f"RESULT load_repay_calls_20k={cost['repay_calls_20k']:.2f}")
    print(f"RESULT session_cache_invalidations={cost['invalidations']}")
    print(f"RESULT session_cost_ratio={cost['session_deferred'] / cost['session_base']:.4f}")
    print(f"RESULT mcp_served={int(how == 'mcp')}")
    print(f"RESULT seconds={time.perf_counter() - started:.1f}")


if __name__ == "__main__":
    main()
