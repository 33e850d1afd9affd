"""The deferred-tools listing: bounded by tools.listing_max_tokens, frozen between compactions (late tools
go to the delta), loaded tools leave it, a compaction folds everything in and names what was loaded."""

from __future__ import annotations

from mtagent.config import Settings
from mtagent.context.tokens import count_text_tokens
from mtagent.context.toolset import ToolCatalog, ToolsetContext
from mtagent.context.toolset.listing import listing_lines


def tool(server: str, name: str) -> dict:
    return {"type": "function", "function": {"name": f"mcp__{server}__{name}",
                                             "description": f"Do {name} on the {server} service, with care.",
                                             "parameters": {"type": "object", "properties": {}}}}


def catalog(n: int, **tools) -> ToolCatalog:
    settings = Settings.model_validate({"tools": {"defer": "always", **tools}})
    return ToolCatalog.build([tool(f"s{i % 3}", f"t{i}") for i in range(n)], settings, window=100_000)


def texts(ctx: ToolsetContext) -> dict[str, str]:
    return {m.response_metadata["mtagent"]["kind"]: str(m.content) for m in ctx.messages()}


def test_small_listings_carry_descriptions_and_large_ones_group_names_within_the_budget() -> None:
    entries = [(f"mcp__s{i % 3}__t{i}", f"Do t{i} on the service.") for i in range(400)]
    lines, more = listing_lines(entries[:5], 2_000)
    assert more == 0 and lines[0] == "- mcp__s0__t0: Do t0 on the service."
    lines, more = listing_lines(entries, 500)
    assert count_text_tokens("\n".join(lines)) <= 500 and more > 0
    assert lines[0].startswith("- mcp__s0__: t0, t3, t6") and len(lines) == 3
    assert listing_lines(entries, 0) == ([], 400)


def test_listing_says_how_many_were_left_out() -> None:
    ctx = ToolsetContext(catalog(600, listing_max_tokens=300))
    listing = texts(ctx)["deferred_tools"]
    assert "more not listed; tool_search finds them too" in listing


def test_late_tools_go_to_the_delta_until_a_compaction_folds_them_in() -> None:
    cat = catalog(20)
    ctx = ToolsetContext(cat)
    first = texts(ctx)["deferred_tools"]
    cat.add([tool("late", "x")])
    again = texts(ctx)
    assert again["deferred_tools"] == first and "mcp__late__x" in again["tools_delta"]
    cat.load(["mcp__s1__t1"])
    ctx.compacted()
    after = texts(ctx)
    assert "mcp__late__x" in after["deferred_tools"] and "- mcp__s1__t1:" not in after["deferred_tools"]
    assert "Tools loaded earlier in this session" in after["tools_delta"] and "mcp__s1__t1" in after["tools_delta"]
    assert "mcp__late__x" not in after["tools_delta"]


def test_nothing_deferred_means_no_listing() -> None:
    settings = Settings.model_validate({"tools": {"defer": "never"}})
    ctx = ToolsetContext(ToolCatalog.build([tool("a", "b")], settings, window=100_000))
    assert ctx.messages() == []
