"""Small builders for the unit tests: measurement records and synthetic Chrome-trace events.

Measurements: ``measurement(layers={"model.0": 100.0}, kernels={"model.0.conv :: gemm": 80.0})``.
Samples are given as one number (repeated ``N`` times) or as a list; all values have at most three
decimals, so a record survives its JSON round trip (which rounds to 0.001 µs) unchanged.

Trace events: dicts shaped like those torch.profiler (Kineto) exports; ``launched(...)`` gives a
kernel event plus the ``cudaLaunchKernel`` runtime event of the same correlation id.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from kernelgate.baseline.store import Entry
from kernelgate.measure.results import Dist, KernelStat, LayerStat, Measurement

N = 5
BENCHMARK = "yolov8n-fp16-bs1-640"
ARCH = "sm90-nvidia-h200"
# the node id of the yolov8n fp16 gate test, and pytest-benchmark metadata for baseline documents
V8 = "benchmarks/test_yolo.py::test_yolo[yolov8n-fp16-bs1-640]"
META: dict[str, Any] = {
    "machine_info": {"node": "gpu-runner-1"},
    "commit_info": {"id": "c651edc"},
    "created": "2026-11-24T07:00:00+00:00",
    "pytest_benchmark_version": "5.2.3",
}

Samples = float | Sequence[float]


def dist(samples: Samples, n: int = N) -> Dist:
    if isinstance(samples, int | float):
        return Dist((float(samples),) * n)
    return Dist(tuple(float(s) for s in samples))


def layer_of(module: str) -> str:
    """``model.22.cv2.0.conv`` -> ``model.22`` (the YOLO top-level layer)."""
    return ".".join(module.split(".")[:2])


def kernel(
    key: str, samples: Samples, calls: float = 1.0, launch: Mapping[str, Any] | None = None
) -> KernelStat:
    module, name = key.split(" :: ")
    return KernelStat(layer_of(module), module, name, dist(samples), calls, dict(launch or {}))


def measurement(
    layers: Mapping[str, Samples] | None = None,
    kernels: Mapping[str, Samples] | None = None,
    total: Samples | None = None,
    *,
    benchmark: str = BENCHMARK,
    arch: str = ARCH,
    wall: Samples = 2000.0,
) -> Measurement:
    """Layers and kernels in the given order; the total defaults to the sum of the layer medians."""
    layer_stats = tuple(LayerStat(name, "Conv", dist(s)) for name, s in (layers or {}).items())
    if total is None:
        total = sum(lay.time.median for lay in layer_stats)
    total_dist = dist(total)
    return Measurement(
        benchmark=benchmark,
        arch=arch,
        device="cuda",
        iterations=total_dist.n,
        total=total_dist,
        busy=total_dist,
        wall=dist(wall, total_dist.n),
        layers=layer_stats,
        kernels=tuple(kernel(key, s) for key, s in (kernels or {}).items()),
        environment={"torch": "2.11.0", "gpu": "NVIDIA H200"},
    )


def bench_fields(fullname: str) -> dict[str, Any]:
    """What pytest-benchmark's ``Metadata.as_dict(include_data=False)`` gives for one benchmark."""
    return {
        "group": None,
        "name": fullname.rpartition("::")[2],
        "fullname": fullname,
        "params": None,
        "param": None,
        "extra_info": {},
        "options": {"disable_gc": False, "timer": "perf_counter", "min_rounds": 5, "max_time": 1.0},
        "stats": {
            "min": 0.0021,
            "max": 0.0025,
            "mean": 0.0023,
            "stddev": 0.0001,
            "rounds": 5,
            "median": 0.0023,
            "iqr": 0.0001,
            "q1": 0.0022,
            "q3": 0.0024,
            "iqr_outliers": 0,
            "stddev_outliers": 1,
            "outliers": "1;0",
            "ld15iqr": 0.0021,
            "hd15iqr": 0.0025,
            "ops": 434.78,
            "total": 0.0115,
            "iterations": 1,
        },
    }


def entry(fullname: str, m: Measurement | None = None) -> Entry:
    return Entry(fullname, m if m is not None else measurement({"model.0": 100.0}), bench_fields(fullname))


def process_step(wall: float, seed: int, jitter: float = 0.01) -> Measurement:
    """One process of a same-host A/B: steady device-side layers (model.0, model.1), the latency of
    its 20 steps around ``wall`` µs (±``jitter``)."""
    rng = random.Random(seed)
    layers = {name: [c * (1 + rng.uniform(-0.001, 0.001)) for _ in range(20)]
              for name, c in (("model.0", 100.0), ("model.1", 200.0))}  # fmt: skip
    total = [sum(v[i] for v in layers.values()) for i in range(20)]
    kernels = {f"{name}.conv :: implicit_gemm": v for name, v in layers.items()}
    latency = [wall * (1 + rng.uniform(-jitter, jitter)) for _ in range(20)]
    return measurement(layers=layers, kernels=kernels, total=total, wall=latency)


# --- synthetic Chrome-trace events ------------------------------------------------------------

CPU_TID = 101
STREAM_TID = 7


def step(n: int, ts: float, end: float, tid: int = CPU_TID) -> dict[str, Any]:
    return {
        "ph": "X",
        "cat": "user_annotation",
        "name": f"ProfilerStep#{n}",
        "pid": 1,
        "tid": tid,
        "ts": ts,
        "dur": end - ts,
    }


def module_range(module: str, ts: float, end: float, tid: int = CPU_TID) -> dict[str, Any]:
    return {
        "ph": "X",
        "cat": "user_annotation",
        "name": f"kg/{module}",
        "pid": 1,
        "tid": tid,
        "ts": ts,
        "dur": end - ts,
    }


def runtime(
    correlation: int, ts: float, tid: int = CPU_TID, name: str = "cudaLaunchKernel"
) -> dict[str, Any]:
    return {
        "ph": "X",
        "cat": "cuda_runtime",
        "name": name,
        "pid": 1,
        "tid": tid,
        "ts": ts,
        "dur": 1.0,
        "args": {"correlation": correlation},
    }


def gpu(
    name: str, correlation: int, ts: float, dur: float, cat: str = "kernel", **facts: Any
) -> dict[str, Any]:
    """A GPU activity; ``facts`` are extra args (``grid=[80, 1, 1]``, ``registers=64``, ...)."""
    args: dict[str, Any] = {"correlation": correlation, "stream": STREAM_TID}
    renamed = {
        "registers": "registers per thread",
        "shared_memory": "shared memory",
        "occupancy": "est. achieved occupancy %",
    }
    args.update({renamed.get(k, k): v for k, v in facts.items()})
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": 0,
        "tid": STREAM_TID,
        "ts": ts,
        "dur": dur,
        "args": args,
    }


def launched(
    name: str,
    correlation: int,
    launch_ts: float,
    start: float,
    dur: float,
    tid: int = CPU_TID,
    cat: str = "kernel",
    **facts: Any,
) -> list[dict[str, Any]]:
    """A GPU activity and the runtime call on ``tid`` that launched it at ``launch_ts``."""
    return [runtime(correlation, launch_ts, tid), gpu(name, correlation, start, dur, cat, **facts)]


def cpu_op(name: str, ts: float, dur: float, tid: int = CPU_TID) -> dict[str, Any]:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur}


def tools_script(name: str) -> ModuleType:
    """``tools/<name>.py`` (a script, not a package module) loaded as module ``name``."""
    path = Path(__file__).resolve().parents[1] / "tools" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module
