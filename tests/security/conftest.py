"""Fixtures of the security tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def project(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    """An empty project folder; its ``.mtagent/config.toml`` is the test module's ``PROJECT_CONFIG`` if any."""
    root = tmp_path / "proj"
    root.mkdir()
    if (config := getattr(request.module, "PROJECT_CONFIG", None)) is not None:
        (root / ".mtagent").mkdir()
        (root / ".mtagent" / "config.toml").write_text(config)
    return root
