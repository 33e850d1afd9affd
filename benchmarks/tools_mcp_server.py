"""A real MCP server (the SDK's MCPServer, stdio) serving the first N tools of ``tools_catalog``.

    python benchmarks/tools_mcp_server.py N

Each tool answers with its name and the arguments it got; the benchmark only lists them.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

from mcp.server.mcpserver import MCPServer

from tools_catalog import CatalogTool, catalog


def handler(tool: CatalogTool) -> Any:
    def run(**kwargs: str) -> str:
        return f"{tool.name}: {sorted(kwargs)}"

    params = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=str) for name, _ in tool.params]
    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    run.__annotations__ = {name: str for name, _ in tool.params}
    run.__name__ = tool.name
    return run


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    server = MCPServer("catalog", instructions="Generated catalog for tools_bench: every tool echoes its arguments.",
                       warn_on_duplicate_tools=False)
    for tool in catalog(count):
        # one server serves every generated server's tools: the server's name goes into the tool name
        docs = "; ".join(f"{name}: {text}" for name, text in tool.params)
        description = tool.description + (f" Parameters — {docs}." if docs else "")
        server.add_tool(handler(tool), name=f"{tool.server}_{tool.name}", description=description)
    server.run()


if __name__ == "__main__":
    main()
