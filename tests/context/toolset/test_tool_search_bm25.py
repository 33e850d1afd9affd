"""tool_search: BM25 over name, description and parameter names; select:; hybrid with embeddings."""

from __future__ import annotations

from hypothesis import given, settings as hsettings, strategies as st

from mtagent.context.toolset.bm25 import stem, terms
from mtagent.context.toolset.fields import FieldIndex, tool_doc
from mtagent.context.toolset.entries import entry_for
from mtagent.context.toolset.search import ToolSearchIndex


def tool(name: str, description: str, *params: str) -> dict:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": {p: {"type": "string"} for p in params}}}}


CATALOG = [entry_for(t) for t in (
    tool("mcp__github__create_issue", "Create a new issue in a GitHub repository.", "owner", "repo", "title"),
    tool("mcp__github__list_pull_requests", "List pull requests of a repository.", "owner", "repo", "state"),
    tool("mcp__slack__post_message", "Send a message to a Slack channel.", "channel", "text"),
    tool("mcp__time__convert_time", "Convert a time between timezones.", "source_timezone", "time"),
    tool("mcp__fs__read_text_file", "Read the complete contents of a file as text.", "path"),
)]


def test_terms_split_names_and_stem_words() -> None:
    assert terms("mcp__github__createIssue") == ["mcp", "github", "creat", "issu"]
    assert terms("listing files") == terms("list file") == ["list", "fil"]
    assert terms("creates") == terms("creating") == terms("create")
    assert stem("running") == "run" and stem("queries") == "query"


def test_paraphrased_queries_find_their_tool_first() -> None:
    index = ToolSearchIndex(CATALOG)
    assert index.search("open a bug report on github", 1)[0].name == "mcp__github__create_issue"
    assert index.search("what time is it in another timezone", 1)[0].name == "mcp__time__convert_time"
    assert index.search("post to a channel", 1)[0].name == "mcp__slack__post_message"


def test_parameter_names_are_searched() -> None:
    assert ToolSearchIndex(CATALOG).search("source_timezone", 1)[0].name == "mcp__time__convert_time"


def test_select_returns_exact_names_only() -> None:
    hits = ToolSearchIndex(CATALOG).search("select:mcp__slack__post_message, nope ,mcp__fs__read_text_file", 5)
    assert [h.name for h in hits] == ["mcp__slack__post_message", "mcp__fs__read_text_file"]


def test_required_word_must_be_in_the_name() -> None:
    hits = ToolSearchIndex(CATALOG).search("+github repository", 5)
    assert hits and all("github" in h.name for h in hits)


class FakeEmbeddings:
    """Vectors by keyword: 'banter' and 'slack' share a direction neither BM25 nor the lexicon can see."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        low = text.lower()
        return [1.0 if ("slack" in low or "banter" in low) else 0.0, 1.0 if "file" in low else 0.0, 0.1]


class BrokenEmbeddings(FakeEmbeddings):
    def embed_query(self, text: str) -> list[float]:
        raise ConnectionError("embedding server down")


def test_hybrid_finds_what_words_alone_miss_and_survives_a_failing_model() -> None:
    assert ToolSearchIndex(CATALOG).search("banter", 1) == []
    hybrid = ToolSearchIndex(CATALOG, embeddings=FakeEmbeddings())
    assert hybrid.mode == "hybrid" and hybrid.search("banter", 1)[0].name == "mcp__slack__post_message"
    broken = ToolSearchIndex(CATALOG, embeddings=BrokenEmbeddings())
    assert broken.search("read a file", 1)[0].name == "mcp__fs__read_text_file"


@hsettings(max_examples=150, deadline=None)
@given(st.text(max_size=300), st.integers(min_value=-3, max_value=30))
def test_any_query_from_a_model_is_answered_without_raising(query: str, k: int) -> None:
    hits = ToolSearchIndex(CATALOG).search(query, k)
    assert len(hits) <= max(0, k) and len({h.name for h in hits}) == len(hits)


def test_bm25_prefers_rarer_terms() -> None:
    index = FieldIndex.build(tool_doc(name, text, ()) for name, text in [("a", "common rare"), ("b", "common"),
                                                                         ("c", "common")])
    ranked = index.rank(dict.fromkeys(terms("common rare"), 1.0))
    assert ranked[0][0] == 0


def test_synonyms_find_what_words_alone_miss_but_exact_words_still_win() -> None:
    from mtagent.context.toolset.lexicon import EXPANSION_WEIGHT, expand

    weights = expand(terms("picture of the page"))
    assert weights["pictur"] == 1.0 and weights["screenshot"] == EXPANSION_WEIGHT
    catalog = [entry_for(tool("mcp__b__screenshot", "Take a screenshot of the current page.", "selector")),
               entry_for(tool("mcp__b__picture_frame", "Frame a picture.", "style"))]
    index = ToolSearchIndex(catalog)
    assert index.search("capture how the site looks", 1)[0].name == "mcp__b__screenshot"
    assert index.search("picture", 2)[0].name == "mcp__b__picture_frame"  # the exact word outranks a synonym
    assert [h.name for h in ToolSearchIndex(CATALOG).search("report a bug", 1)] == ["mcp__github__create_issue"]
