"""Cold start: how long a fresh process takes from launch to steady-state inference, phase by phase.

The phases and the records: what a child builds (:class:`ChildSpec`: a YOLO model, eager or under
``torch.compile``, or the PTX probe), one child's phase times (:class:`Run`) and the runs of a scenario
(:class:`ColdStart`, as the baseline file keeps them). The child imports this module before its
timers start: no torch, nothing heavy at module level.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from kernelgate.coldstart.scenarios import SCENARIOS
from kernelgate.measure.results import Dist

if TYPE_CHECKING:
    from kernelgate.models.yolo import YoloSpec

PHASES = (
    "startup",
    "import_torch",
    "import_model",
    "load_driver",
    "cuda_init",
    "build",
    "load_cache",
    "compile",
    "module_load",
    "first_inference",
    "first_launch",
    "to_steady",
)
PHASE_HELP = {
    "startup": "process launch until the child's first line of Python",
    "import_torch": "import torch",
    "import_model": "import ultralytics' DetectionModel",
    "load_driver": "load libcuda.so.1 (ctypes)",
    "cuda_init": "CUDA context and first kernel (torch.zeros on the GPU, synchronize); probe: cuInit, "
    "primary context",
    "build": "model from its yaml, on the device, in its precision",
    "load_cache": "torch.compiler.load_cache_artifacts of a saved compile-artifacts file "
    "(KERNELGATE_LOAD_COMPILE_ARTIFACTS)",
    "compile": "first call of the torch.compile'd model: Dynamo tracing, AOTAutograd, Inductor codegen or "
    "its FX-graph cache, Triton compiling (PTX, ptxas) or loading its kernels, then the forward",
    "module_load": "cuModuleLoadDataEx of the probe's PTX: the driver's JIT compile, or its JIT cache",
    "first_inference": "first forward: kernel loading (PTX JIT), cuDNN/cuBLAS handles, autotuning; "
    "compiled: the first forward after the compiling call",
    "first_launch": "first launch of each probe kernel, synchronized",
    "to_steady": "forwards after the first until the time per forward settles",
}
EAGER, COMPILE = "eager", "compile"
PTX_PROBE = "ptxprobe"  # ChildSpec.model of the PTX probe (kernelgate.coldstart.ptxprobe)
TOTAL = "to_steady_state"  # launch to steady-state inference: the sum of the phases
SCHEMA = 1


@dataclass(frozen=True)
class ChildSpec:
    """What one child process builds and runs."""

    model: str = "yolov8n"
    precision: str = "fp16"
    batch: int = 1
    imgsz: int = 640
    device: str = "cuda"
    iterations: int = 50  # timed forwards after the first, to find the steady state
    cudnn_benchmark: bool = False
    mode: str = EAGER  # or COMPILE: torch.compile(net, options=compile_options), inductor
    compile_options: str = ""  # JSON object, e.g. '{"fx_graph_cache": false}'; not part of the id
    probe_kernels: int = 0  # the PTX probe: how many kernels its PTX module holds (model = PTX_PROBE)

    @property
    def yolo(self) -> YoloSpec:
        from kernelgate.models.yolo import YoloSpec

        return YoloSpec(self.model, self.precision, self.batch, self.imgsz, mode=self.mode)

    def to_json(self) -> dict[str, Any]:
        """The fields; those added later only where they differ from their default, so records of
        eager models read as before."""
        data = asdict(self)
        for name, default in (("mode", EAGER), ("compile_options", ""), ("probe_kernels", 0)):
            if data[name] == default:
                del data[name]
        return data

    @property
    def is_probe(self) -> bool:
        return self.model == PTX_PROBE

    @property
    def options(self) -> dict[str, Any]:
        """``compile_options`` as a dict (empty when none)."""
        found: dict[str, Any] = json.loads(self.compile_options) if self.compile_options else {}
        return found

    @property
    def id(self) -> str:
        """The same id as the kernel benchmark of this model (``YoloSpec.id``: ``-compile`` for
        compiled ones); ``ptxprobe-8k`` for the PTX probe of 8 kernels."""
        if self.is_probe:
            return f"{PTX_PROBE}-{self.probe_kernels}k"
        return self.yolo.id

    def benchmark(self, scenario: str) -> str:
        """The benchmark id of this spec's cold start in ``scenario``, e.g.
        ``coldstart-yolov8n-fp16-bs1-640-warm``."""
        return f"coldstart-{self.id}-{scenario}"


@dataclass(frozen=True)
class Run:
    """One child process: its phases (ms), the steady forward time, the JIT cache it left."""

    phases_ms: Mapping[str, float]
    process_ms: float
    cache_bytes: int
    steady_ms: float | None = None
    steady_after: int | None = None
    error: str | None = None
    failed_phase: str | None = None
    # counts and seconds that explain the phases, not gated: compile-cache hits and misses, Triton
    # kernels compiled and cached, Dynamo/Inductor times per step; the probe's JIT wall time
    details: Mapping[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def total_ms(self) -> float:
        return sum(self.phases_ms.values())

    @property
    def failure(self) -> str | None:
        """``in phase cuda_init: RuntimeError: ...`` (None for a run that completed)."""
        if self.error is None:
            return None
        return f"in phase {self.failed_phase}: {self.error}" if self.failed_phase else self.error

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["phases_ms"] = {p: round(self.phases_ms[p], 3) for p in PHASES if p in self.phases_ms}
        data["process_ms"] = round(self.process_ms, 3)
        if self.details:
            data["details"] = {k: round(v, 6) for k, v in sorted(self.details.items())}
        else:
            del data["details"]  # as records before details existed
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Run:
        return cls(
            phases_ms={str(k): float(v) for k, v in data["phases_ms"].items()},
            process_ms=float(data["process_ms"]),
            cache_bytes=int(data["cache_bytes"]),
            steady_ms=None if data.get("steady_ms") is None else float(data["steady_ms"]),
            steady_after=None if data.get("steady_after") is None else int(data["steady_after"]),
            error=data.get("error"),
            failed_phase=data.get("failed_phase"),
            details={str(k): float(v) for k, v in (data.get("details") or {}).items()},
        )


def _us(values: Sequence[float]) -> Dist:
    return Dist(tuple(1000.0 * v for v in values))


@dataclass(frozen=True)
class ColdStart:
    """The runs of one scenario; figures are medians over the runs that completed."""

    spec: ChildSpec
    scenario: str
    arch: str
    env: Mapping[str, str]  # what the scenario (and the caller) set for the children
    runs: tuple[Run, ...]
    environment: Mapping[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.spec.benchmark(self.scenario)

    @property
    def ok_runs(self) -> tuple[Run, ...]:
        return tuple(r for r in self.runs if r.ok)

    @property
    def error(self) -> str | None:
        failed = next((r for r in self.runs if not r.ok), None)
        return None if failed is None else failed.failure

    def phase(self, name: str) -> Dist | None:
        """Per-run times of a phase, in µs (as every :class:`Dist`); None if no run had the phase."""
        values = [r.phases_ms[name] for r in self.ok_runs if name in r.phases_ms]
        return _us(values) if values else None

    @property
    def total(self) -> Dist:
        return _us([r.total_ms for r in self.ok_runs])

    @property
    def process(self) -> Dist:
        return _us([r.process_ms for r in self.ok_runs])

    @property
    def cache_bytes(self) -> int:
        return max((r.cache_bytes for r in self.runs), default=0)

    def detail(self, name: str) -> float | None:
        """The median over the completed runs of a detail (None where no run has it)."""
        values = sorted(r.details[name] for r in self.ok_runs if name in r.details)
        if not values:
            return None
        mid = len(values) // 2
        return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2

    def to_json(self) -> dict[str, Any]:
        medians = {p: d.median / 1000.0 for p in PHASES if (d := self.phase(p)) is not None}
        return {
            "schema": SCHEMA,
            "benchmark": self.id,
            "scenario": self.scenario,
            "description": SCENARIOS[self.scenario].description if self.scenario in SCENARIOS else "",
            "spec": self.spec.to_json(),
            "arch": self.arch,
            "env": dict(sorted(self.env.items())),
            "median_ms": {k: round(v, 3) for k, v in medians.items()}
            | {TOTAL: round(self.total.median / 1000.0, 3)},
            "jit_cache_bytes": self.cache_bytes,
            "error": self.error,
            "runs": [r.to_json() for r in self.runs],
            "environment": dict(sorted(self.environment.items())),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ColdStart:
        return cls(
            spec=ChildSpec(**data["spec"]),
            scenario=str(data["scenario"]),
            arch=str(data["arch"]),
            env={str(k): str(v) for k, v in data.get("env", {}).items()},
            runs=tuple(Run.from_json(r) for r in data["runs"]),
            environment={str(k): str(v) for k, v in data.get("environment", {}).items()},
        )


def _count(details: Mapping[str, float], key: str) -> int:
    return int(details.get(key, 0.0))


def explain(details: Mapping[str, float], steps: int = 0) -> str:
    """What a run's details say about its caches, in words ('' where it has none): FX-graph and
    AOTAutograd cache hits and misses, Triton kernels compiled and cached, the PTX probe's JIT time;
    with ``steps``, that many of the slowest compile steps (nested: a step includes those it calls)."""
    parts = []
    if any(k.startswith("inductor.fxgraph_cache") for k in details):
        parts.append(
            "FX-graph cache {} hit / {} miss / {} bypass".format(
                *(_count(details, f"inductor.fxgraph_cache_{k}") for k in ("hit", "miss", "bypass"))
            )
        )
    if any(k.startswith("aot_autograd.autograd_cache") for k in details):
        parts.append(
            "AOTAutograd cache {} hit / {} miss / {} bypass".format(
                *(_count(details, f"aot_autograd.autograd_cache_{k}") for k in ("hit", "miss", "bypass"))
            )
        )
    if "triton.kernels_after" in details:
        parts.append(
            f"Triton compiled {_count(details, 'triton.kernels_compiled')} kernel(s), "
            f"{_count(details, 'triton.kernels_after')} in its cache after"
        )
    if "jit.wall_ms" in details:
        parts.append(
            f"driver JIT {details['jit.wall_ms']:.0f} ms (CU_JIT_WALL_TIME) for "
            f"{_count(details, 'ptx.kernels')} kernel(s), {_count(details, 'ptx.bytes')} B of PTX"
        )
    if "artifacts.loaded_bytes" in details:
        parts.append(f"loaded {_count(details, 'artifacts.loaded_bytes')} B of compile artifacts")
    times = sorted(((v, k[5:]) for k, v in details.items() if k.startswith("time.")), reverse=True)
    if steps and times:
        parts.append("slowest steps: " + ", ".join(f"{name} {v:.1f} s" for v, name in times[:steps]))
    return "; ".join(parts)
