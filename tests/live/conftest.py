"""Fixtures for the live tests: llama.cpp's ``llama-server`` with SmolLM2-135M-Instruct, both built
or unpacked beforehand by ``tests/live/build_llama_server.sh`` (``.ci/run`` does that, cached).

Nothing here builds or downloads: without the binary and the model every live test skips and says
how to get them. The cache location is read once, at import, because the suite's autouse fixture
clears the caller's ``MTAGENT_*`` variables (and ``MTAGENT_``-prefixed names that are not settings
are refused by mtagent itself, hence ``LIVE_LLAMA_*``).
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from live_server import LlamaServer, locate

BUILD_SCRIPT = Path(__file__).with_name("build_llama_server.sh")
CACHE = Path(os.environ.get("LIVE_LLAMA_CACHE") or Path.home() / ".cache" / "mtagent-live")
BINARY = Path(os.environ.get("LIVE_LLAMA_SERVER") or CACHE / "bin" / "llama-server")
MODEL = Path(os.environ.get("LIVE_LLAMA_MODEL") or CACHE / "models" / "SmolLM2-135M-Instruct.gguf")
WINDOW = 2048  # the server's -c: small enough that one long turn overflows it


@pytest.fixture(autouse=True)
def one_inference_at_a_time() -> Iterator[None]:
    """Live tests of two suites on one machine take turns (a file lock in the temp folder): two
    llama-servers generating at once on 2 cores each run at half speed, past the tests' time limits
    (a CLI run beside a second suite once took over its 240 s)."""
    with open(Path(tempfile.gettempdir()) / "mtagent-live-inference.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test under tests/live carries the ``live`` marker (``-m "not live"`` leaves them out)."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.live)


@pytest.fixture(scope="session")
def llama_paths() -> tuple[Path, Path]:
    """The server binary and the model, or a skip that says how to build them."""
    missing = locate(BINARY, MODEL)
    if missing:
        pytest.skip(f"live llama.cpp test: {missing}; build both once with `bash tests/live/{BUILD_SCRIPT.name}` "
                    f"(5-10 min on 2 cores, cached in {CACHE})")
    return BINARY, MODEL


@pytest.fixture(scope="session")
def llama_server(llama_paths: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory):
    """One llama-server with tool support (``--jinja``) and a 2,048-token window for the session."""
    binary, model = llama_paths
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with LlamaServer(binary, model, log=log, window=WINDOW, jinja=True) as server:
        yield server


@pytest.fixture
def no_tools_server(llama_paths: tuple[Path, Path], tmp_path: Path):
    """The same model served with ``--no-jinja``: llama-server then refuses every request with tools."""
    binary, model = llama_paths
    with LlamaServer(binary, model, log=tmp_path / "server.log", window=WINDOW, jinja=False) as server:
        yield server
