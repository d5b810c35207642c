"""Cold start, each run a fresh process: import, CUDA init, build, compile, first forward, steady state.

On a GPU: yolov8n fp16 with an empty and a warm CUDA JIT cache, and CUDA_FORCE_PTX_JIT=1 with an empty
and a warm cache (skipped, with the reason, where the installed torch has no PTX this GPU can compile);
each torch.compile configuration of the selected matrix set with empty, warm and changed Inductor and
Triton caches. On the CPU: one scenario at 160x160. And the PTX probe (kernelgate's own kernels, PTX
only, JIT-compiled by the driver) with an empty, a warm and a too small JIT cache (skipped without a
GPU or nvcc). Gated per phase with ``coldstart_threshold`` / ``coldstart_floor_ms``.
``KERNELGATE_COLDSTART_RUNS`` sets the timed runs per scenario (default 3).
"""

from __future__ import annotations

import os
from typing import Any

RUNS = int(os.environ.get("KERNELGATE_COLDSTART_RUNS", "3"))
# torch.compile(options=...) of the compiled cold starts, and variables for the PTX probe's children:
# what a project would change (tools/jit-coldstart commits a change of each in a head to show the gate
# failing)
COMPILE_OPTIONS: dict[str, Any] = {}
PROBE_ENV: dict[str, str] = {}


def test_coldstart(kernelgate: Any, coldstart_case: tuple[str, str, int, str, str]) -> None:
    model, precision, imgsz, scenario, mode = coldstart_case
    record = kernelgate.coldstart(
        model=model,
        precision=precision,
        imgsz=imgsz,
        scenario=scenario,
        runs=RUNS,
        mode=mode,
        compile_options=COMPILE_OPTIONS,
    )
    assert record.ok_runs, record.error
    # the phases account for the whole launch-to-steady-state time of every run
    for run in record.ok_runs:
        assert run.total_ms > 0 and run.phases_ms["first_inference"] > 0
        assert run.process_ms >= run.total_ms - run.phases_ms["startup"]
        if mode == "compile":  # the compiling call is its own phase, and its caches were read
            assert run.phases_ms["compile"] > 0 and run.details, run.details


def test_ptx_probe(kernelgate: Any, probe_scenario: str) -> None:
    record = kernelgate.coldstart(model="ptxprobe", scenario=probe_scenario, runs=RUNS, env=PROBE_ENV)
    assert record.ok_runs, record.error
    for run in record.ok_runs:
        assert run.phases_ms["module_load"] > 0 and run.phases_ms["first_launch"] > 0
        assert run.details["ptx.kernels"] == record.spec.probe_kernels
