"""Cold start: how long a fresh process takes from launch to steady-state inference, phase by phase.

The phases and the records: what a child builds (:class:`ChildSpec`), one child's phase times (:class:`Run`)
and the runs of a scenario (:class:`ColdStart`, as the baseline file keeps them). The child imports
this module before its timers start: no torch, nothing heavy at module level.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from kernelgate.coldstart.scenarios import SCENARIOS
from kernelgate.measure.results import Dist

if TYPE_CHECKING:
    from kernelgate.models.yolo import YoloSpec

PHASES = ("startup", "import_torch", "import_model", "cuda_init", "build", "first_inference", "to_steady")
PHASE_HELP = {
    "startup": "process launch until the child's first line of Python",
    "import_torch": "import torch",
    "import_model": "import ultralytics' DetectionModel",
    "cuda_init": "CUDA context and first kernel (torch.zeros on the GPU, synchronize)",
    "build": "model from its yaml, on the device, in its precision",
    "first_inference": "first forward: kernel loading (PTX JIT), cuDNN/cuBLAS handles, autotuning",
    "to_steady": "forwards after the first until the time per forward settles",
}
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

    @property
    def yolo(self) -> YoloSpec:
        from kernelgate.models.yolo import YoloSpec

        return YoloSpec(self.model, self.precision, self.batch, self.imgsz)

    @property
    def id(self) -> str:
        """The same id as the kernel benchmark of this model (``YoloSpec.id``)."""
        return self.yolo.id


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
        return f"coldstart-{self.spec.id}-{self.scenario}"

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

    def to_json(self) -> dict[str, Any]:
        medians = {p: d.median / 1000.0 for p in PHASES if (d := self.phase(p)) is not None}
        return {
            "schema": SCHEMA,
            "benchmark": self.id,
            "scenario": self.scenario,
            "description": SCENARIOS[self.scenario].description if self.scenario in SCENARIOS else "",
            "spec": asdict(self.spec),
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
