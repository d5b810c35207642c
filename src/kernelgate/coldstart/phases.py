"""Cold start: how long a fresh process takes from launch to steady-state inference, phase by phase.

Every run is a child process (``python -c``) with a controlled environment; it prints one JSON line
with its phase timings, and the parent aggregates the runs of a scenario into a :class:`ColdStart`.
Scenarios differ in the CUDA JIT cache (an empty or a warm ``CUDA_CACHE_PATH`` in a temporary
folder) and in ``CUDA_FORCE_PTX_JIT=1``, which makes the driver ignore native code (SASS) and
JIT-compile every kernel from PTX: the situation of a GPU newer than the framework's build.
Everything else is inherited from the caller's environment, which is what is under test (a CI
runner that sets ``CUDA_CACHE_DISABLE=1`` or ``CUDA_MODULE_LOADING=EAGER`` shows up here).

No torch at module level: the child imports it, inside its ``import_torch`` phase.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelgate.machine.jit_cache import folder_bytes
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
MARK = "KERNELGATE_COLDSTART "  # the child's result line starts with this
SLOW_PHASE_VAR = "KERNELGATE_SLOW_PHASE"  # "import_torch:1.5": the child sleeps 1.5 s in that phase
CHILD_CODE = "from kernelgate.coldstart.phases import child; child()"
CACHE_PATH_SHOWN = "(kernelgate scenario folder)"
SCHEMA = 1


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    force_ptx: bool = False
    warm_cache: bool = False  # one priming run fills the cache folder; the timed runs reuse it


SCENARIOS = {
    s.name: s
    for s in (
        Scenario("empty", "empty CUDA JIT cache in every run, as on a fresh runner"),
        Scenario("warm", "CUDA JIT cache filled by an earlier run, as on a reused runner", warm_cache=True),
        Scenario(
            "ptx-jit",
            "CUDA_FORCE_PTX_JIT=1, empty JIT cache: every kernel JIT-compiled from PTX in every run",
            force_ptx=True,
        ),
        Scenario(
            "ptx-jit-warm",
            "CUDA_FORCE_PTX_JIT=1, JIT cache filled by an earlier run",
            force_ptx=True,
            warm_cache=True,
        ),
    )
}


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


# --- the child --------------------------------------------------------------------------------------


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


# --- the parent -------------------------------------------------------------------------------------


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


class Runner:
    """Runs the children of one scenario in folders below ``workdir``; keeps the timed runs."""

    def __init__(
        self,
        spec: ChildSpec,
        scenario: Scenario,
        workdir: Path,
        extra_env: Mapping[str, str] | None = None,
        timeout_s: float = 600.0,
        command: Sequence[str] = (sys.executable, "-c", CHILD_CODE),
    ) -> None:
        self.spec = spec
        self.scenario = scenario
        self.workdir = workdir
        self.extra_env = dict(extra_env or {})
        self.timeout_s = timeout_s
        self.command = tuple(command)
        self.runs: list[Run] = []
        self._reports: list[dict[str, Any]] = []

    @property
    def env(self) -> dict[str, str]:
        """What this scenario sets on top of the caller's environment (recorded with the results)."""
        return ({"CUDA_FORCE_PTX_JIT": "1"} if self.scenario.force_ptx else {}) | self.extra_env

    def _cache_dir(self) -> Path:
        if self.scenario.warm_cache:
            path = self.workdir / "cache"
            path.mkdir(parents=True, exist_ok=True)
            return path
        return Path(tempfile.mkdtemp(prefix="cache-", dir=self.workdir))

    def _environ(self, cache: Path) -> dict[str, str]:
        environ = dict(os.environ)
        environ.pop("CUDA_FORCE_PTX_JIT", None)
        environ.setdefault("YOLO_OFFLINE", "1")
        environ["CUDA_CACHE_PATH"] = str(cache)
        return environ | self.env

    def spawn(self) -> Run:
        """One child process; its run is returned (failures as a run with ``error``), not kept."""
        cache = self._cache_dir()
        spawned = time.time()
        start = time.perf_counter()
        argument = json.dumps({"spec": asdict(self.spec), "spawned": spawned})
        try:
            done = subprocess.run(
                [*self.command, argument],
                env=self._environ(cache),
                capture_output=True,
                text=True,
                timeout=self.timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            elapsed = 1000.0 * (time.perf_counter() - start)
            return Run({}, elapsed, folder_bytes(cache), error=f"timed out after {self.timeout_s:g} s")
        elapsed = 1000.0 * (time.perf_counter() - start)
        return self._parse(done, elapsed, folder_bytes(cache))

    def _parse(self, done: subprocess.CompletedProcess[str], elapsed: float, cache_bytes: int) -> Run:
        lines = [line for line in done.stdout.splitlines() if line.startswith(MARK)]
        if not lines:
            tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
            return Run(
                {}, elapsed, cache_bytes, error=f"child exited {done.returncode} without a result: {tail}"
            )
        report = json.loads(lines[-1][len(MARK) :])
        self._reports.append(report)
        return Run(
            phases_ms=report.get("phases_ms", {}),
            process_ms=elapsed,
            cache_bytes=cache_bytes,
            steady_ms=report.get("steady_ms"),
            steady_after=report.get("steady_after"),
            error=None if report.get("ok") else report.get("error", "unknown error"),
            failed_phase=report.get("failed_phase"),
        )

    def run(self) -> Run:
        """One timed run, kept."""
        result = self.spawn()
        self.runs.append(result)
        return result

    def run_or_raise(self) -> None:
        """One timed run; a failed child raises :class:`ColdStartError` (pytest-benchmark's target)."""
        result = self.run()
        if not result.ok:
            raise ColdStartError(f"{self.spec.id} {self.scenario.name}: {result.failure}")

    def record(self, fallback_arch: str = "unknown") -> ColdStart:
        last: dict[str, Any] = next((r for r in reversed(self._reports) if r.get("ok")), {})
        return ColdStart(
            spec=self.spec,
            scenario=self.scenario.name,
            arch=str(last.get("arch", fallback_arch)),
            env=self.env,
            runs=tuple(self.runs),
            environment=dict(last.get("environment", {})),
        )


class ColdStartError(RuntimeError):
    """A cold-start child failed; the message names the phase and the child's error."""


def measure(
    spec: ChildSpec,
    scenario: Scenario,
    runs: int,
    extra_env: Mapping[str, str] | None = None,
    timeout_s: float = 600.0,
    prime: bool = True,
    fallback_arch: str = "unknown",
    progress: Callable[[str], None] | None = None,
) -> ColdStart:
    """``runs`` cold starts of ``scenario``, after one untimed priming run (which fills the JIT cache
    of a warm scenario and the OS file cache of every scenario). Stops at the first failed run."""
    with tempfile.TemporaryDirectory(prefix="kernelgate-coldstart-") as work:
        runner = Runner(spec, scenario, Path(work), extra_env, timeout_s)
        if prime:
            first = runner.spawn()
            if progress:
                progress(f"{scenario.name}: priming run {_summary(first)}")
            if not first.ok:
                runner.runs.append(first)
                return runner.record(fallback_arch)
        for i in range(runs):
            result = runner.run()
            if progress:
                progress(f"{scenario.name}: run {i + 1}/{runs} {_summary(result)}")
            if not result.ok:
                break
        return runner.record(fallback_arch)


def _summary(run: Run) -> str:
    if not run.ok:
        return f"failed {run.failure}"
    return f"{run.total_ms / 1000.0:.2f} s to steady state, JIT cache {run.cache_bytes} B"
