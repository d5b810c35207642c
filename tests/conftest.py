"""Skip ``gpu``-marked tests where torch sees no CUDA GPU (CI); run them on a GPU machine.

Under ``pytest -n`` (pytest-xdist) the test processes carry ``PYTEST_XDIST_*`` variables, which
would make the pytest runs the tests start (pytester) think they are xdist workers too: pytest-benchmark
then switches itself off in them. Each test sees an environment without them.
"""

from __future__ import annotations

import copy
import functools
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest
from _pytest import pytester as _pytester
from pytest_benchmark import plugin as _benchmark_plugin

# tests/adopter/ is another repository (tests/test_adopter.py copies it and runs its own tests there)
collect_ignore = ["adopter"]

# One intra-op thread in every torch this suite runs, the processes it starts included (they inherit
# the environment; kernelgate takes the count from it, machine/threads.py). Left at the CPU count, each
# of pytest-xdist's workers and each process they start runs 2 OpenMP threads on the 2 cores: with
# more runnable threads than cores an op waits for a descheduled thread, and a tiny module's profiled
# forward took 47 ms instead of 0.2 ms beside one busy loop (2026-11-26), and test_ab's A/B, which keeps
# rounds that disagree, passed a head 250 times heavier. Tests that are about the thread count set
# their own.
os.environ["OMP_NUM_THREADS"] = "1"
# Inductor's CPU backend (torch.compile in test_coldstart_compile.py, test_matrix_cpu.py) takes the
# vector ISAs this CPU reports as buildable without compiling and loading a probe library for each
# first: with an empty Inductor cache (each cold-start run of test_coldstart_compile starts with one) the
# probes took 3 g++ runs of 1.6 s and 3 of 0.35 s, and that test 22.9 s instead of 16 to 18 s alone
# (2-core machine, 2026-11-27). What those tests check (FX-graph cache miss then hit, the compiled
# layers) does not depend on the probe.
os.environ["TORCHINDUCTOR_VEC_ISA_OK"] = "1"


@pytest.fixture(autouse=True)
def _no_xdist_worker_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith("PYTEST_XDIST_")]:
        monkeypatch.delenv(name)


class _AsAProcess(_pytester.SysModulesSnapshot):
    """pytester's snapshot of ``sys.modules``, restored after each in-process run (``pytester.runpytest``,
    ``inline_run``) and after the test, made to undo what a pytest process of its own would have
    kept to itself, and no more.

    pytester drops every module a run imported, so that the next run imports its ``test_*.py`` and
    ``conftest.py`` afresh: that would drop torch, ultralytics and the parts of kernelgate a run
    imported too, and torch cannot be imported twice into one process. Only the modules of the
    session's temporary folders go. The environment is put back too: ``import ultralytics`` sets
    ``OMP_NUM_THREADS=1``, which kernelgate reads when the next run is configured.
    """

    temp = ""  # the test session's temporary folder (set by the fixture below)

    def __init__(self, preserve: object = None) -> None:
        def keep(name: str) -> bool:
            return bool(callable(preserve) and preserve(name)) or not _in_temp(sys.modules.get(name))

        super().__init__(preserve=keep)
        self.environ = dict(os.environ)

    def restore(self) -> None:
        super().restore()
        os.environ.clear()
        os.environ.update(self.environ)


# pytest-benchmark describes the CPU at the end of every session (py-cpuinfo, which starts a Python
# process of its own for it): the in-process runs of one test process read it once, as a pytest
# process of their own would, and each gets its own copy.
_cpu_info = functools.cache(_benchmark_plugin.get_cpu_info)
_benchmark_plugin.get_cpu_info = lambda: copy.deepcopy(_cpu_info())


def _in_temp(module: ModuleType | None) -> bool:
    where = getattr(module, "__file__", None) or next(iter(getattr(module, "__path__", None) or ()), None)
    return where is not None and str(where).startswith(_AsAProcess.temp)


@pytest.fixture(autouse=True)
def _inprocess_runs_as_processes(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    if "pytester" in request.fixturenames:
        _AsAProcess.temp = str(tmp_path_factory.getbasetemp())
        monkeypatch.setattr(_pytester, "SysModulesSnapshot", _AsAProcess)


def _starts_processes(item: pytest.Item) -> bool:
    """A test that runs pytest (or the gate) in processes of its own: seconds to a minute each."""
    return "pytester" in getattr(item, "fixturenames", ()) or item.get_closest_marker("slow") is not None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # the `slow` tests first (the end-to-end ones, up to two minutes each), then the other tests that
    # start processes, the unit tests last (each group in its order): under `-n 2 --dist loadgroup`
    # (.ci/run) each worker takes the next test as it finishes one, longest first, so that no
    # minute-long test starts last while the other worker idles
    items.sort(key=lambda item: (not _starts_processes(item), item.get_closest_marker("slow") is None))
    # the tests of the built wheel run in one worker: `built` is per process, and a build takes seconds
    for item in items:
        if "built" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("built-wheel"))
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


@pytest.fixture(scope="session")
def plugin_args() -> tuple[str, ...]:
    """What a pytest process that ``pytester.runpytest_subprocess`` starts needs to load kernelgate:
    nothing where kernelgate is installed (its ``pytest11`` entry point loads it; a ``-p`` beside it
    would register it twice), ``-p kernelgate.plugin.hooks`` where it is only importable (an absolute
    ``PYTHONPATH=$PWD/src``, as on a GPU machine whose image lacks the package: there the two pytester
    tests of ``pytest -m gpu`` failed with "unrecognized arguments: --kernelgate", 2026-11-27, H200; a
    relative one would not reach the processes pytester starts in its temporary folder). pytester
    drops ``PYTEST_ADDOPTS`` for the processes it starts, so that variable cannot carry it."""
    from importlib.metadata import entry_points

    installed = any(ep.value == "kernelgate.plugin.hooks" for ep in entry_points(group="pytest11"))
    return () if installed else ("-p", "kernelgate.plugin.hooks")
