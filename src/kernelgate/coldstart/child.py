"""What runs inside a cold-start child process: its phase timers and the phases, then one result line.

The parent starts it as ``python -c CHILD_CODE '<JSON>'`` and reads the line that starts with ``MARK``.
Its imports count toward ``startup``: no torch here (the child imports it inside ``import_torch``).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from kernelgate.coldstart.phases import ChildSpec

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
        out.update(_run(spec, phases))
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

    with torch.no_grad():
        with phases.phase("first_inference"):
            forward()
        phases.current = "to_steady"
        durations = [forward() for _ in range(spec.iterations)]
    index = steady_index(durations)
    phases.ms["to_steady"] = sum(durations[:index])
    env = software.collect(torch, spec.device)
    if "env.CUDA_CACHE_PATH" in env:
        env["env.CUDA_CACHE_PATH"] = CACHE_PATH_SHOWN
    return {
        "steady_ms": round(statistics.median(durations[index:] or durations or [0.0]), 3),
        "steady_after": index,
        "arch": identity.torch_arch_key(torch, spec.device),
        "environment": env,
    }
