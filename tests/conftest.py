"""Every test runs with MTAGENT_HOME in a temp dir and no MTAGENT_* settings from the caller (but
sandbox.mode = "off": see the fixture)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser import chromium_page  # noqa: F401  (the shared headless-Chromium fixture, tests/browser.py)
from interrupts import sigint_delivered  # noqa: F401  (Ctrl-C tests, whatever started pytest: tests/interrupts.py)
from ray_local import ray_cluster  # noqa: F401  (one local Ray per module: tests/ray_local.py)

SHARED = Path(__file__).resolve().parents[2] / "shared"
TRAJECTORIES = SHARED / "trajectories"


@pytest.fixture(autouse=True)
def mtagent_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("mtagent-home")
    for name in list(os.environ):
        if name.startswith("MTAGENT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("MTAGENT_HOME", str(home))
    # Sessions run shell commands as on a machine without bubblewrap, whatever this one has: whether a
    # command asks must not depend on the machine. Sandbox tests set sandbox.mode themselves.
    monkeypatch.setenv("MTAGENT_SANDBOX__MODE", "off")
    return home


@pytest.fixture(autouse=True)
def _fresh_probes() -> Iterator[None]:
    """No test sees the server kind or window a stub server answered another test (ports are reused)."""
    from mtagent.agent.server_profiles import forget_probes

    forget_probes()
    yield
    forget_probes()


@pytest.fixture
def project(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    """A project folder holding the test module's ``PROJECT_FILES`` ({path in the project: text}), if any."""
    root = tmp_path / "proj"
    root.mkdir()
    for name, text in getattr(request.module, "PROJECT_FILES", {}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def pipe() -> Iterator:
    """What the user types at a REPL in-process (prompt_toolkit's input from a pipe)."""
    from prompt_toolkit.input import create_pipe_input

    with create_pipe_input() as inp:
        yield inp


@pytest.fixture
def trajectories() -> Path:
    """The shared real trajectories; tests that need them skip where they are absent."""
    if not TRAJECTORIES.is_dir():
        pytest.skip(f"shared trajectories not found at {TRAJECTORIES} (they live beside the checkout)")
    return TRAJECTORIES
