"""tool_search: BM25 over name, description and parameter names; select:; hybrid with embeddings; ranked
by field (name, server, description), phrases and distinct tools (#38).

One BM25 over a tool's words let a long description outweigh a name, ignored which product a
tool belongs to, and let a family of near-identical tools fill the top five on one shared word:
each field test fails on the old single-field search.
"""

from __future__ import annotations

from hypothesis import given, settings as hsettings, strategies as st

from mtagent.context.toolset.bm25 import stem, terms
from mtagent.context.toolset.fields import FieldIndex, split_name, tool_doc
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


def index(*tools: dict) -> ToolSearchIndex:
    return ToolSearchIndex([entry_for(t) for t in tools])


def names(idx: ToolSearchIndex, query: str, k: int = 5) -> list[str]:
    return [h.name for h in idx.search(query, k)]


def test_the_server_names_the_product() -> None:
    idx = index(tool("mcp__jira__create_issue", "Create a new issue in a project.", "project", "title"),
                tool("mcp__github__create_issue", "Create a new issue in a repository.", "repo", "title"),
                tool("mcp__linear__create_issue", "Create a new issue for a team.", "team", "title"))
    assert names(idx, "create a github issue", 1) == ["mcp__github__create_issue"]
    assert names(idx, "open a jira issue", 1) == ["mcp__jira__create_issue"]


def test_a_word_in_the_name_outweighs_the_same_word_in_a_long_description() -> None:
    idx = index(
        tool("mcp__ci__get_pipeline", "Get one pipeline with its jobs, the logs of every job, artifacts, the runner, "
             "environment, the logs of its deploy step and links to logs of related pipelines.", "id"),
        tool("mcp__k8s__get_logs", "Fetch output of a pod.", "pod"))
    assert names(idx, "get logs", 1) == ["mcp__k8s__get_logs"]


def test_words_next_to_each_other_rank_above_the_same_words_apart(monkeypatch) -> None:
    from mtagent.context.toolset import fields

    idx = index(tool("mcp__a__sync_remote", "Pull every change from the remote, then request a rebuild of it.", "x"),
                tool("mcp__b__show_change", "Show one pull request with every change of the branch in it.", "x"))
    assert names(idx, "pull request", 1) == ["mcp__b__show_change"]
    monkeypatch.setattr(fields, "PHRASE_WEIGHT", 0.0)  # without the phrase the other ranks first
    assert names(idx, "pull request", 1) == ["mcp__a__sync_remote"]


def test_near_duplicate_tools_do_not_fill_the_top_five() -> None:
    family = [tool(f"mcp__crm__{verb}_note", f"{verb.title()} a note of a contact in the crm.", "id")
              for verb in ("create", "get", "list", "update", "archive", "export", "search", "delete")]
    others = [tool(f"mcp__misc__tool_{i}", f"Unrelated helper number {i} for something else.", "x") for i in range(30)]
    distinct = tool("mcp__tasks__plan_week", "Plan the week: set a deadline for each open item on the board, "
                    "move the rest to later and tell the owners what changed.", "board")
    idx = index(*family, *others, distinct)
    top = names(idx, "note the deadline", 5)
    assert "mcp__tasks__plan_week" in top[:2]  # one crm note tool stands for the family …
    assert sum(n.startswith("mcp__crm__") for n in top) == 4  # … the rest still follow it


def test_a_request_s_function_words_are_not_search_terms() -> None:
    assert terms("can you please show me what's in it") == ["show"]
    assert stem("modified") == stem("modify") and stem("copies") == stem("copied") == "copy"


def test_the_server_and_tool_of_a_name() -> None:
    assert split_name("mcp__github__create_issue") == ("github", "create_issue")
    assert split_name("read_file", "builtin") == ("", "read_file")
    assert split_name("echo", "mcp:fixture") == ("fixture", "echo")
    assert split_name("mcp__broken") == ("", "mcp__broken")
