"""Skip ``gpu``-marked tests where torch sees no CUDA GPU (CI); run them on a GPU machine.

Under ``pytest -n`` (pytest-xdist) the test processes carry ``PYTEST_XDIST_*`` variables, which
would make the pytest runs the tests start (pytester) think they are xdist workers too: pytest-benchmark
then switches itself off in them. Each test sees an environment without them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# tests/adopter/ is another repository (tests/test_adopter.py copies it and runs its own tests there)
collect_ignore = ["adopter"]


@pytest.fixture(autouse=True)
def _no_xdist_worker_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith("PYTEST_XDIST_")]:
        monkeypatch.delenv(name)


def _starts_processes(item: pytest.Item) -> bool:
    """A test that runs pytest (or the gate) in processes of its own: seconds to a minute each."""
    return "pytester" in getattr(item, "fixturenames", ()) or item.get_closest_marker("slow") is not None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # the tests that start processes first (in their order), the unit tests after them: under
    # `-n 2` (.ci/run) no minute-long test starts last while the other worker idles
    items.sort(key=lambda item: not _starts_processes(item))
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items:
        return
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU: run `pytest -m gpu` on a GPU machine")
    for item in gpu_items:
        item.add_marker(skip)


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """kernelgate's wheel and sdist, built once per test process by ``python -m build`` with build
    isolation (tests/wheels.py)."""
    from wheels import build

    return build(tmp_path_factory.mktemp("build"))
