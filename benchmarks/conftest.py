"""The suite's cold-start scenarios: on a GPU, yolov8n fp16 in every eager scenario, each compile
configuration of the selected matrix set (``mode = "compile"``: the nightly ``full`` set) with empty,
warm and changed compile caches; on the CPU, one scenario at fp32 160x160. And the PTX probe with an
empty, a warm and a too small JIT cache (skipped, with the reason, without a GPU or nvcc). The kernel
benchmarks take their configurations from the matrix in pyproject.toml (``kernelgate_case``)."""

from __future__ import annotations

import os

import pytest

EAGER_SCENARIOS = ("empty", "warm", "ptx-jit", "ptx-jit-warm")
COMPILE_SCENARIOS = ("empty", "warm", "changed")
PROBE_SCENARIOS = ("empty", "warm", "small-cache")
PROBE_OPT_IN = "KERNELGATE_PTX_PROBE"


def _on_gpu(config: pytest.Config) -> bool:
    if config.getoption("kernelgate_device", "auto") == "cpu":
        return False
    import torch

    return bool(torch.cuda.is_available())


def compile_configurations(config: pytest.Config) -> list[tuple[str, str, int]]:
    """(model, precision, imgsz) of the selected matrix configurations that run under torch.compile at
    batch 1, inference only, default layout: what a cold-start child can build."""
    from kernelgate.plugin.session import STATE_KEY

    state = config.stash.get(STATE_KEY, None)
    found = {
        (c.model, c.precision, c.imgsz)
        for c in (state.cases if state is not None else ())
        if c.mode == "compile"
        and c.batch == 1
        and c.stage == "inference"
        and not (c.channels_last or c.fuse)
        and c.precision in ("fp16", "fp32")
    }
    return sorted(found)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "coldstart_case" in metafunc.fixturenames:
        gpu = _on_gpu(metafunc.config)
        scenarios = EAGER_SCENARIOS if gpu else ("empty",)
        cold = [("yolov8n", "fp16" if gpu else "fp32", 640 if gpu else 160, s, "eager") for s in scenarios]
        if gpu:
            compiled = compile_configurations(metafunc.config)
            cold += [(*c, s, "compile") for c in compiled for s in COMPILE_SCENARIOS]
        ids = [f"{m}-{p}-bs1-{i}{'-compile' if mode == 'compile' else ''}-{s}" for m, p, i, s, mode in cold]
        metafunc.parametrize("coldstart_case", cold, ids=ids)
    if "probe_scenario" in metafunc.fixturenames:  # skipped, with the reason, without a GPU or nvcc
        ids = [f"ptxprobe-{s}" for s in PROBE_SCENARIOS]
        # opt-in until a runner's architecture has its probe baseline: a GPU runner with nvcc would
        # otherwise fail every pull request on "no baseline" (tools/jit-coldstart --gate records one)
        opted = os.environ.get(PROBE_OPT_IN) == "1"
        mark = pytest.mark.skip(
            reason=f"the PTX probe is opt-in: set {PROBE_OPT_IN}=1 (needs nvcc and its baseline)"
        )
        params = [
            pytest.param(s, id=i, marks=() if opted else (mark,))
            for s, i in zip(PROBE_SCENARIOS, ids, strict=True)
        ]
        metafunc.parametrize("probe_scenario", params)
