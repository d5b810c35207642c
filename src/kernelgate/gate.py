"""One benchmark, end to end: time it, profile it, attribute it, compare it with its baseline.

This is what the ``kernelgate`` fixture runs. torch is imported here, not in the plugin.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kernelgate import attribute, baseline, environment, measure, profile, trace
from kernelgate.attribute import Layers
from kernelgate.coldstart import ChildSpec, ColdStart
from kernelgate.compare import Comparison, compare
from kernelgate.config import MissingBaseline
from kernelgate.model import YoloSpec, build_yolo, make_input, slow_down
from kernelgate.report import failure_message
from kernelgate.session import MissingBaselineWarning, State

GPU_SCHEDULE = profile.Schedule(wait=1, warmup=2, active=20)
CPU_SCHEDULE = profile.Schedule(wait=1, warmup=1, active=5)
GPU_ROUNDS = 50
CPU_ROUNDS = 10


def pick_device(requested: str) -> str:
    import torch

    if requested == "cpu":
        return "cpu"
    if torch.cuda.is_available():
        return "cuda"
    if requested == "cuda":
        raise pytest.UsageError(
            "--kernelgate-device=cuda, but torch sees no CUDA GPU (torch.cuda.is_available() is False)"
        )
    return "cpu"


@dataclass(frozen=True)
class Result:
    measurement: measure.Measurement
    comparison: Comparison | None
    trace_path: Path


class KernelGate:
    """The ``kernelgate`` fixture: ``kernelgate.yolo(model="yolov8n", precision="fp16")``."""

    def __init__(self, state: State, benchmark: Any, node_name: str) -> None:
        self.state = state
        self.benchmark = benchmark
        self.node_name = node_name
        self.device = pick_device(state.options.device)

    def yolo(
        self, model: str = "yolov8n", precision: str = "fp16", batch: int = 1, imgsz: int = 640
    ) -> Result:
        spec = YoloSpec(model=model, precision=precision, batch=batch, imgsz=imgsz)
        net, layers = build_yolo(spec, self.device)
        return self.module(net, make_input(spec, self.device), layers, name=spec.id)

    def module(self, net: Any, host_input: Any, layers: Layers, name: str | None = None) -> Result:
        """Gate any ``nn.Module`` called as ``net(input)``; ``layers`` names its top-level layers.

        ``name`` is the benchmark's id in reports and threshold rules (default: the test's name).
        """
        import torch

        bench_id = name or self.node_name

        opts = self.state.options
        if opts.slow_layer:
            slow_down(net, opts.slow_layer, opts.slow_extra_runs)
        gpu = self.device.startswith("cuda")
        step = _make_step(torch, net, host_input, self.device)
        with torch.no_grad():
            for _ in range(3):
                step()
            self.benchmark.pedantic(
                step, rounds=GPU_ROUNDS if gpu else CPU_ROUNDS, warmup_rounds=2, iterations=1
            )
            schedule = GPU_SCHEDULE if gpu else CPU_SCHEDULE
            if opts.iterations:
                schedule = profile.Schedule(schedule.wait, schedule.warmup, opts.iterations)
            trace_path = opts.out_dir / "traces" / f"{_safe(self.node_name)}.json"
            profile.run(step, net, gpu=gpu, schedule=schedule, trace_path=trace_path)
        parsed = trace.parse(trace_path, gpu=gpu)
        frame = attribute.attribute(parsed, layers)
        arch = environment.torch_arch_key(torch, self.device)
        stats = getattr(self.benchmark, "stats", None)
        wall = [1e6 * t for t in stats.stats.data] if stats else []
        result = measure.build(
            frame,
            benchmark=bench_id,
            arch=arch,
            device=self.device,
            iterations=len(parsed.steps),
            wall_us=wall,
            environment=environment.collect(torch, self.device),
            unlinked=parsed.unlinked,
        )
        self.benchmark.extra_info["kernelgate"] = result.to_json()
        self._keep(result, stats)
        comparison = None if opts.save else self._gate(result, layers)
        return Result(result, comparison, trace_path)

    def coldstart(
        self,
        model: str = "yolov8n",
        precision: str = "fp16",
        batch: int = 1,
        imgsz: int = 640,
        scenario: str = "warm",
        runs: int = 3,
        prime: bool = True,
    ) -> ColdStart:
        """Time ``runs`` cold starts of the model, each in a fresh process, and gate every phase
        against the baseline (:mod:`kernelgate.coldgate`); ``scenario`` is one of
        :data:`kernelgate.coldstart.SCENARIOS` (``empty``, ``warm``, ``ptx-jit``, ``ptx-jit-warm``)."""
        from kernelgate import coldgate

        iterations = 50 if self.device.startswith("cuda") else 20  # forwards after the first
        spec = ChildSpec(model, precision, batch, imgsz, self.device, iterations)
        return coldgate.run(self, spec, scenario, runs, prime)

    def _keep(self, result: measure.Measurement, stats: Any) -> None:
        if stats is None:
            if self.state.options.save:
                pytest.fail(
                    "kernelgate: --kernelgate-save needs pytest-benchmark's timings, but benchmarking is "
                    "disabled. Run without --benchmark-disable / --benchmark-skip.",
                    pytrace=False,
                )
            return
        bench = stats.as_dict(include_data=False)
        bench.pop("extra_info", None)
        self.state.measured.append(baseline.Entry(self.benchmark.fullname, result, bench))

    def _gate(self, result: measure.Measurement, layers: Layers) -> Comparison | None:
        found = self.baseline_entry(result)
        if found is None:
            return None
        entry, path = found
        comparison = compare(entry.measurement, result, self.state.config)
        self.state.comparisons.append(comparison)
        if comparison.failed:
            changes = environment.changes(entry.measurement.environment, result.environment)
            pytest.fail(failure_message(comparison, dict(layers.types), shown(path), changes), pytrace=False)
        return comparison

    def baseline_entry(self, result: measure.Measurement) -> tuple[baseline.Entry, Path] | None:
        """This benchmark's baseline for this GPU, or None once a missing baseline failed or warned.

        A baseline of another GPU (another product of the same architecture, or the same key with
        other memory, max clock or power limit: :func:`environment.gpu_differences`) is refused
        unless ``--kernelgate-allow-other-gpu``.
        """
        base_dir, allow = self.state.config.baseline_dir, self.state.options.allow_other_gpu
        path = baseline.path_for(base_dir, result.arch)
        others = [] if path.exists() else environment.same_architecture(result.arch, _keys(base_dir))
        if others and allow:
            path = baseline.path_for(base_dir, others[0])
        try:
            entries = self.state.baseline_entries(path)
        except baseline.BaselineError as exc:
            pytest.fail(f"kernelgate: {exc}", pytrace=False)
        entry = entries.get(self.benchmark.fullname)
        if entry is None:
            self._no_baseline(result, path, others)
            return None
        differences = environment.gpu_differences(entry.measurement.environment, result.environment)
        if differences and not allow:
            pytest.fail(
                environment.other_gpu_message(result.benchmark, shown(path), differences), pytrace=False
            )
        if differences or path.parent.name != result.arch:
            listed = "; ".join(str(d) for d in differences) or f"{path.parent.name} for {result.arch}"
            self.state.notes.append(
                f"{result.benchmark}: compared with another GPU's baseline ({listed}), "
                f"as {environment.OTHER_GPU_OPTION} asked"
            )
        return entry, path

    def _no_baseline(self, result: measure.Measurement, path: Path, others: list[str] | None = None) -> None:
        self.state.missing.append(result.benchmark)
        message = (
            f"kernelgate: no baseline for {result.benchmark!r} on {result.arch} "
            f"(looked in {shown(path)}). Record one on this machine: "
            f"pytest benchmarks --kernelgate-save -k '{result.benchmark}' and commit {shown(path.parent)}/."
        )
        if others:
            message += (
                f" Baselines of other GPUs of the same architecture exist ({', '.join(others)}); a "
                "timing of one GPU does not hold for another, so they are not used unless "
                f"{environment.OTHER_GPU_OPTION} is given."
            )
        if self.state.config.missing_baseline is MissingBaseline.FAIL:
            pytest.fail(message, pytrace=False)
        warnings.warn(message, MissingBaselineWarning, stacklevel=2)


def _keys(baseline_dir: Path) -> list[str]:
    """The architecture keys that have a baseline file."""
    if not baseline_dir.is_dir():
        return []
    return sorted(p.name for p in baseline_dir.iterdir() if (p / baseline.FILE_NAME).is_file())


def _make_step(torch: Any, net: Any, host_input: Any, device: str) -> Callable[[], None]:
    gpu = device.startswith("cuda")

    def step() -> None:
        with torch.profiler.record_function(trace.RANGE_PREFIX + "input"):
            x = host_input.to(device, non_blocking=True)
        net(x)
        if gpu:
            torch.cuda.synchronize()

    return step


def shown(path: Path) -> str:
    """``path`` relative to the working directory where it lies below it (shorter messages)."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:200]
