"""Cold start of yolov8n, each run a fresh process: import, CUDA init, build, first forward, steady state.

On a GPU: an empty and a warm CUDA JIT cache, and CUDA_FORCE_PTX_JIT=1 with an empty and a warm cache
(skipped, with the reason, where the installed torch has no PTX this GPU can compile). On the CPU:
one scenario at 160x160. Gated per phase with ``coldstart_threshold`` / ``coldstart_floor_ms``.
``KERNELGATE_COLDSTART_RUNS`` sets the timed runs per scenario (default 3).
"""

from __future__ import annotations

import os
from typing import Any

RUNS = int(os.environ.get("KERNELGATE_COLDSTART_RUNS", "3"))


def test_coldstart(kernelgate: Any, coldstart_case: tuple[str, str, int, str]) -> None:
    model, precision, imgsz, scenario = coldstart_case
    record = kernelgate.coldstart(model=model, precision=precision, imgsz=imgsz, scenario=scenario, runs=RUNS)
    assert record.ok_runs, record.error
    # the phases account for the whole launch-to-steady-state time of every run
    for run in record.ok_runs:
        assert run.total_ms > 0 and run.phases_ms["first_inference"] > 0
        assert run.process_ms >= run.total_ms - run.phases_ms["startup"]
