"""tool_search ranks by field (name, server, description), phrases and distinct tools (#38).

One BM25 over a tool's words let a long description outweigh a name, ignored which product a
tool belongs to, and let a family of near-identical tools fill the top five on one shared word.
Each test here fails on the old single-field search.
"""

from __future__ import annotations

from mtagent.context.toolset.bm25 import stem, terms
from mtagent.context.toolset.entries import entry_for
from mtagent.context.toolset.fields import split_name
from mtagent.context.toolset.search import ToolSearchIndex


def tool(name: str, description: str, *params: str) -> dict:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": {p: {"type": "string"} for p in params}}}}


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
