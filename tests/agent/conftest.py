"""Fixtures of the agent tests (helpers live in agent_helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_helpers import ToolCounter, make_project


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path)


@pytest.fixture
def counter() -> ToolCounter:
    return ToolCounter()
