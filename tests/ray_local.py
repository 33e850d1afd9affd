"""One local Ray instance per test module that asks for ``ray_cluster`` (``tests/conftest.py`` imports
the fixture, so every test sees it), started alike for replay's executors and eval's runs.

``num_cpus=2``, no dashboard, loopback, errors only; skipped with the install hint where Ray is
absent. The asking module is pickled by value: its functions are not importable on Ray's workers
(``tests/`` is not a package there).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="module")
def ray_cluster(request: pytest.FixtureRequest) -> Iterator[None]:
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'mtagent[ray]')")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1",
             logging_level="ERROR")
    ray.cloudpickle.register_pickle_by_value(request.module)
    yield
    ray.shutdown()
