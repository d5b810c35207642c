"""What runs inside a cold-start child process: its phase timers and the phases, then one result line.

The parent starts it as ``python -c CHILD_CODE '<JSON>'`` and reads the line that starts with ``MARK``.
Its imports count toward ``startup``: no torch here (the child imports it inside ``import_torch``).
A YOLO model runs eager or under ``torch.compile`` (its first call is the ``compile`` phase); the PTX
probe (:mod:`kernelgate.coldstart.ptxprobe.driver`) imports no torch at all.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kernelgate.coldstart.phases import COMPILE, ChildSpec
from kernelgate.machine.compile_cache import LOAD_ARTIFACTS

MARK = "KERNELGATE_COLDSTART "  # the child's result line starts with this
SLOW_PHASE_VAR = "KERNELGATE_SLOW_PHASE"  # "import_torch:1.5": the child sleeps 1.5 s in that phase
CHILD_CODE = "from kernelgate.coldstart.child import child; child()"
CACHE_PATH_SHOWN = "(kernelgate scenario folder)"


def steady_index(durations: Sequence[float], tolerance: float = 0.5, window: int = 5) -> int:
    """The first forward from which ``window`` forwards in a row stay within ``tolerance`` of the
    steady time (the median of the second half); ``len(durations)`` if that never happens."""
    if not durations:
        return 0
    limit = (1.0 + tolerance) * statistics.median(durations[len(durations) // 2 :])
    window = min(window, len(durations))
    for i in range(len(durations) - window + 1):
        if all(d <= limit for d in durations[i : i + window]):
            return i
    return len(durations)


def _slow_phase() -> tuple[str, float]:
    name, _, seconds = os.environ.get(SLOW_PHASE_VAR, "").partition(":")
    return name, float(seconds or 0.0)


class _Phases:
    def __init__(self) -> None:
        self.ms: dict[str, float] = {}
        self.current = "startup"
        self.slow = _slow_phase()

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        self.current = name
        start = time.perf_counter()
        if self.slow[0] == name:
            time.sleep(self.slow[1])
        yield
        self.ms[name] = 1000.0 * (time.perf_counter() - start)


def child() -> None:
    """A cold start, in the child: ``python -c "<CHILD_CODE>" '<spec JSON>'``; prints one JSON line."""
    started = time.time()
    args = json.loads(sys.argv[1])
    spec = ChildSpec(**args["spec"])
    phases = _Phases()
    phases.ms["startup"] = max(0.0, 1000.0 * (started - float(args["spawned"])))
    out: dict[str, Any] = {"ok": False}
    try:
        out.update(_probe(spec, phases, args.get("ptx")) if spec.is_probe else _run(spec, phases))
        out["ok"] = True
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"[:2000]
        out["failed_phase"] = phases.current
    out["phases_ms"] = {k: round(v, 3) for k, v in phases.ms.items()}
    print(MARK + json.dumps(out), flush=True)


def _run(spec: ChildSpec, phases: _Phases) -> dict[str, Any]:
    with phases.phase("import_torch"):
        import torch
    with phases.phase("import_model"):
        os.environ.setdefault("YOLO_OFFLINE", "1")
        from ultralytics.nn.tasks import DetectionModel  # noqa: F401

    from kernelgate.machine import identity, software
    from kernelgate.models.yolo import build_detection_model, make_input

    gpu = spec.device.startswith("cuda")
    if gpu:
        with phases.phase("cuda_init"):
            torch.zeros(1, device=spec.device)
            torch.cuda.synchronize()
    torch.backends.cudnn.benchmark = spec.cudnn_benchmark
    yolo = spec.yolo
    with phases.phase("build"):
        net = build_detection_model(yolo, spec.device)
        host = make_input(yolo, spec.device)

    def forward() -> float:
        start = time.perf_counter()
        net(host.to(spec.device, non_blocking=True))
        if gpu:
            torch.cuda.synchronize()
        return 1000.0 * (time.perf_counter() - start)

    details: dict[str, float] = {}
    with torch.no_grad():
        if spec.mode == COMPILE:
            from kernelgate.coldstart import compiled

            if os.environ.get(LOAD_ARTIFACTS):
                with phases.phase("load_cache"):
                    details |= compiled.load_artifacts()
            before = compiled.cache_state()
            with phases.phase("compile"):
                net, imported = compiled.compile_model(torch, net, spec.options)
                forward()
            details |= compiled.details(before) | imported
        with phases.phase("first_inference"):
            forward()
        phases.current = "to_steady"
        durations = [forward() for _ in range(spec.iterations)]
    index = steady_index(durations)
    phases.ms["to_steady"] = sum(durations[:index])
    if spec.mode == COMPILE:
        details |= compiled.save_artifacts()  # after the timed phases
    env = software.collect(torch, spec.device)
    if spec.mode == COMPILE:
        env["triton"] = software.version_of("triton")
    if "env.CUDA_CACHE_PATH" in env:
        env["env.CUDA_CACHE_PATH"] = CACHE_PATH_SHOWN
    return {
        "steady_ms": round(statistics.median(durations[index:] or durations or [0.0]), 3),
        "steady_after": index,
        "arch": identity.torch_arch_key(torch, spec.device),
        "environment": env,
        "details": details,
    }


def _probe(spec: ChildSpec, phases: _Phases, ptx: str | None) -> dict[str, Any]:
    """The PTX probe: load its PTX through the driver (JIT or JIT cache), launch each kernel once."""
    from kernelgate.coldstart.ptxprobe import driver
    from kernelgate.coldstart.ptxprobe.build import kernel_names

    if not ptx:
        raise ValueError("the PTX probe's child got no PTX file (the parent builds it: Runner.prepare)")
    loaded, env, arch = driver.run(Path(ptx), kernel_names(spec.probe_kernels), phases.phase)
    if "env.CUDA_CACHE_PATH" in env:
        env["env.CUDA_CACHE_PATH"] = CACHE_PATH_SHOWN
    return {
        "arch": arch,
        "environment": env,
        "details": {
            "jit.wall_ms": loaded.jit_wall_ms,
            "ptx.bytes": float(loaded.ptx_bytes),
            "ptx.kernels": float(loaded.kernels),
        },
    }
