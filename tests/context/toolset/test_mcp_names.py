"""The MCP tool-name spelling (``mcp__<server>__<tool>``) is defined once, in the context layer."""

from __future__ import annotations

import ast
from pathlib import Path

from mtagent.agent.approval import ApprovalPolicy
from mtagent.context.toolset.entries import MCP_PREFIX, is_mcp_tool, mcp_source
from mtagent.tools.mcp.untrusted import tool_name

SRC = Path(__file__).resolve().parents[3] / "src" / "mtagent"
HOME = SRC / "context" / "toolset" / "entries.py"


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def test_the_mcp_prefix_is_spelled_only_in_entries() -> None:
    """A second copy of ``"mcp__"`` (approvals, the MCP client) could drift from the catalog's."""
    copies = []
    for path in SRC.rglob("*.py"):
        if path == HOME:
            continue
        tree = ast.parse(path.read_text())
        skip = _docstrings(tree)
        copies += [f"{path.relative_to(SRC)}:{node.lineno}" for node in ast.walk(tree)
                   if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
                   and node.value.startswith(MCP_PREFIX)]
    assert copies == []


def test_names_the_client_makes_are_the_ones_approvals_and_the_catalog_recognise() -> None:
    name = tool_name("git_hub", "create-issue")
    assert is_mcp_tool(name) and mcp_source(name) == "mcp:git_hub"
    verdict = ApprovalPolicy().decide(name, {})
    assert verdict.decision == "ask" and '"mcp__git_hub__*" = "allow"' in verdict.rule
    assert not is_mcp_tool("read_file") and mcp_source("mcp__nohalf") is None
