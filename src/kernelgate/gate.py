"""One benchmark, end to end: time it, profile it, attribute it, compare it with its baseline.

This is what the ``kernelgate`` fixture runs. torch is imported here, not in the plugin.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kernelgate import attribute, baseline, environment, measure, profile, trace
from kernelgate.attribute import Layers
from kernelgate.compare import Comparison, compare, confirmed
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

    def __init__(self, state: State, benchmark: Any, node: pytest.Item) -> None:
        self.state = state
        self.benchmark = benchmark
        self.node = node
        self.node_name = node.name
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
        step = make_step(torch, net, host_input, self.device)
        trace_path = opts.out_dir / "traces" / f"{_safe(self.node_name)}.json"
        with torch.no_grad():
            for _ in range(3):
                step()
            self.benchmark.pedantic(
                step, rounds=GPU_ROUNDS if gpu else CPU_ROUNDS, warmup_rounds=2, iterations=1
            )
            stats = getattr(self.benchmark, "stats", None)
            wall = [1e6 * t for t in stats.stats.data] if stats else []
            result = self._measure(torch, step, net, layers, bench_id, wall, trace_path)
            if result.throttled:  # one more try before the result goes on with a flag
                result = self._measure(torch, step, net, layers, bench_id, wall, trace_path)
        if opts.confirm_out is not None:
            opts.confirm_out.parent.mkdir(parents=True, exist_ok=True)
            opts.confirm_out.write_text(json.dumps(result.to_json()), encoding="utf-8")
            return Result(result, None, trace_path)
        self.benchmark.extra_info["kernelgate"] = result.to_json()
        self._keep(result, stats)
        comparison = None if opts.save else self._gate(result, layers)
        return Result(result, comparison, trace_path)

    def _measure(
        self,
        torch: Any,
        step: Callable[[], None],
        net: Any,
        layers: Layers,
        bench_id: str,
        wall: list[float],
        trace_path: Path,
    ) -> measure.Measurement:
        gpu = self.device.startswith("cuda")
        schedule = GPU_SCHEDULE if gpu else CPU_SCHEDULE
        if self.state.options.iterations:
            schedule = profile.Schedule(schedule.wait, schedule.warmup, self.state.options.iterations)
        return measure_module(
            torch, step, net, layers, bench_id=bench_id, device=self.device, schedule=schedule,
            wall_us=wall, trace_path=trace_path,
        )  # fmt: skip

    def _confirm(self) -> tuple[measure.Measurement | None, str]:
        """Measure this benchmark again in a fresh process (a new round) and return its record."""
        opts = self.state.options
        folder = opts.out_dir / "confirm"
        out = folder / f"{_safe(self.node_name)}.json"
        out.unlink(missing_ok=True)
        command = [
            sys.executable, "-m", "pytest", f"{self.node.path}::{self.node_name}",
            "-p", "no:cacheprovider", "-q", "--benchmark-disable", "--kernelgate",
            f"--kernelgate-confirm-out={out}", f"--kernelgate-device={self.device}",
            f"--kernelgate-out={folder}",
        ]  # fmt: skip
        if opts.slow_layer:
            command.append(f"--kernelgate-slow-layer={opts.slow_layer}:{opts.slow_extra_runs}")
        if opts.iterations:
            command.append(f"--kernelgate-iterations={opts.iterations}")
        done = subprocess.run(
            command, cwd=self.node.config.rootpath, capture_output=True, text=True, timeout=900, check=False
        )
        if done.returncode != 0 or not out.is_file():
            tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
            return None, f"confirm run failed (exit {done.returncode}): " + " | ".join(tail)
        return measure.Measurement.from_json(json.loads(out.read_text(encoding="utf-8"))), ""

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
        path = baseline.path_for(self.state.config.baseline_dir, result.arch)
        try:
            entries = self.state.baseline_entries(path)
        except baseline.BaselineError as exc:
            pytest.fail(f"kernelgate: {exc}", pytrace=False)
        entry = entries.get(self.benchmark.fullname)
        if entry is None:
            self._no_baseline(result, path)
            return None
        comparison = compare(entry.measurement, result, self.state.config)
        if comparison.failed and self.state.config.confirm:
            again, problem = self._confirm()
            if again is not None:
                comparison = confirmed(comparison, compare(entry.measurement, again, self.state.config))
            else:
                comparison = dataclasses.replace(comparison, notes=(*comparison.notes, problem))
        self.state.comparisons.append(comparison)
        if comparison.failed:
            pytest.fail(failure_message(comparison, dict(layers.types), shown(path)), pytrace=False)
        return comparison

    def _no_baseline(self, result: measure.Measurement, path: Path) -> None:
        self.state.missing.append(result.benchmark)
        message = (
            f"kernelgate: no baseline for {result.benchmark!r} on {result.arch} "
            f"(looked in {shown(path)}). Record one on this machine: "
            f"pytest benchmarks --kernelgate-save -k '{result.benchmark}' and commit {shown(path.parent)}/."
        )
        if self.state.config.missing_baseline is MissingBaseline.FAIL:
            pytest.fail(message, pytrace=False)
        warnings.warn(message, MissingBaselineWarning, stacklevel=2)


def measure_module(
    torch: Any,
    step: Callable[[], None],
    net: Any,
    layers: Layers,
    *,
    bench_id: str,
    device: str,
    schedule: profile.Schedule,
    wall_us: list[float],
    trace_path: Path,
) -> measure.Measurement:
    """Profile, attribute and aggregate one round; read the GPU's state through NVML after it."""
    gpu = device.startswith("cuda")
    profile.run(step, net, gpu=gpu, schedule=schedule, trace_path=trace_path)
    gpu_state = environment.gpu_state() if gpu else {}
    parsed = trace.parse(trace_path, gpu=gpu)
    frame = attribute.attribute(parsed, layers)
    return measure.build(
        frame,
        benchmark=bench_id,
        arch=environment.torch_arch_key(torch, device),
        device=device,
        iterations=len(parsed.steps),
        wall_us=wall_us,
        environment=environment.collect(torch, device),
        unlinked=parsed.unlinked,
        gpu_states=(gpu_state,) if gpu_state else (),
    )


def make_step(torch: Any, net: Any, host_input: Any, device: str) -> Callable[[], None]:
    """One inference: copy the input to the device (range ``kg/input``), forward, synchronize."""
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
