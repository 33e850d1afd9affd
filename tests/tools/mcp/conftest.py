"""Fixtures of the MCP client's tests (helpers: mcp_helpers.py); skipped when the SDK is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the MCP SDK is not installed: pip install 'mtagent[mcp]'")


@pytest.fixture
def project(project: Path) -> Path:
    """The shared project folder (tests/conftest.py) with a README (a sandboxed server must not change it)."""
    (project / "README.md").write_text("# project\n")
    return project
