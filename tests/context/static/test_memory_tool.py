"""The save_memory LangChain tool writes only to the memory lists."""

from __future__ import annotations

from pathlib import Path

from mtagent import paths
from mtagent.context.static import memory
from mtagent.tools.memory_tool import build_save_memory_tool


def test_save_memory_tool_global_and_project(tmp_path: Path) -> None:
    tool = build_save_memory_tool(tmp_path)
    assert tool.name == "save_memory"
    assert "Saved to global" in tool.invoke({"fact": "user likes short answers"})
    assert "Saved to project" in tool.invoke({"fact": "kernel code is in src/k", "scope": "project"})
    assert "nothing changed" in tool.invoke({"fact": "User likes short answers."})
    assert memory.memory_file("global").active() == ["user likes short answers"]
    assert (paths.project_memory_dir(tmp_path) / "MEMORY.md").read_text().count("kernel code is in src/k") == 1


def test_save_memory_tool_reports_bad_fact_instead_of_raising(tmp_path: Path) -> None:
    tool = build_save_memory_tool(tmp_path)
    assert tool.invoke({"fact": "  "}).startswith("Error:")
