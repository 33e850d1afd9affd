"""Fixtures of the subagent tests (helpers live in subagent_helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from subagent_helpers import make_code


@pytest.fixture
def code(tmp_path: Path) -> Path:
    return make_code(tmp_path / "code")
