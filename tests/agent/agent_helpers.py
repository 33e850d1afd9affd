"""Helpers for the agent tests: settings with zero backoff, a small project, counting tools."""

from __future__ import annotations

from pathlib import Path

from langchain_core.tools import StructuredTool

from mtagent.config import Settings
from mtagent.tools import default_tools


def agent_settings(**sections) -> Settings:
    """Spec defaults, retries without waiting, plus per-test overrides by section."""
    data = {"agent": {"retry_base_seconds": 0.0, "max_retries": 2}, "session_memory": {"enabled": False}}
    for name, values in sections.items():
        data.setdefault(name, {}).update(values)
    return Settings.model_validate(data)


def make_project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("import os\n\ndef main():\n    return os.getcwd()\n")
    (root / "README.md").write_text("# demo project\n")
    return root


class ToolCounter:
    """Tools whose executions are counted, added to the default tools."""

    def __init__(self) -> None:
        self.runs: list[str] = []

    def tools(self, context):
        def probe(label: str) -> str:
            """Record that the probe ran and echo its label."""
            self.runs.append(label)
            return f"probe {label} ran"

        return [*default_tools(context.workspace.root, context=context),
                StructuredTool.from_function(probe, name="probe")]
