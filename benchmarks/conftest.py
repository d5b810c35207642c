"""The suite's matrix: on a GPU, fp16 and fp32 at 640x640 (cold start: yolov8n fp16 in every scenario);
on the CPU, fp32 at 160x160 (cold start: one scenario)."""

from __future__ import annotations

import pytest

MODELS = ("yolov8n", "yolo11n")


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
    if "yolo_case" not in metafunc.fixturenames:
        return
    gpu = _on_gpu(metafunc.config)
    precisions = ("fp16", "fp32") if gpu else ("fp32",)
    imgsz = 640 if gpu else 160
    cases = [(m, p, 1, imgsz) for m in MODELS for p in precisions]
    metafunc.parametrize("yolo_case", cases, ids=[f"{m}-{p}-bs{b}-{s}" for m, p, b, s in cases])
