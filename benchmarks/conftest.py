"""The suite's cold-start scenarios: on a GPU, yolov8n fp16 in every scenario; on the CPU, one
scenario at fp32 160x160. The kernel benchmarks take their configurations from the matrix in
pyproject.toml (``kernelgate_case``)."""

from __future__ import annotations

import pytest


def _on_gpu(config: pytest.Config) -> bool:
    if config.getoption("kernelgate_device", "auto") == "cpu":
        return False
    import torch

    return bool(torch.cuda.is_available())


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "coldstart_case" in metafunc.fixturenames:
        gpu = _on_gpu(metafunc.config)
        scenarios = ("empty", "warm", "ptx-jit", "ptx-jit-warm") if gpu else ("empty",)
        cold = [("yolov8n", "fp16" if gpu else "fp32", 640 if gpu else 160, s) for s in scenarios]
        metafunc.parametrize("coldstart_case", cold, ids=[f"{m}-{p}-bs1-{i}-{s}" for m, p, i, s in cold])
