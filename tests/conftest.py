"""Skip ``gpu``-marked tests where torch sees no CUDA GPU (CI); run them on a GPU machine.

Under ``pytest -n`` (pytest-xdist) the test processes carry ``PYTEST_XDIST_*`` variables, which
would make the pytest runs the tests start (pytester) think they are xdist workers too: pytest-benchmark
then switches itself off in them. Each test sees an environment without them.
"""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True)
def _no_xdist_worker_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith("PYTEST_XDIST_")]:
        monkeypatch.delenv(name)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items:
        return
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU: run `pytest -m gpu` on a GPU machine")
    for item in gpu_items:
        item.add_marker(skip)
