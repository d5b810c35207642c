"""The ``kernelgate`` fixture: run one benchmark (:mod:`kernelgate.measure.pipeline`), keep its record,
compare it with its baseline, confirm a failure in a fresh process. torch is imported here, not in
the plugin's hooks."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec

import pytest

from kernelgate.baseline import store as baseline
from kernelgate.baseline.names import safe_name, shown
from kernelgate.coldstart.phases import ColdStart
from kernelgate.config import Policy, node_target
from kernelgate.machine import cpuspeed, threads
from kernelgate.measure import faults, integrity, placement, profile, timing
from kernelgate.measure import results as measure
from kernelgate.measure.pipeline import CPU_ROUNDS, CPU_SCHEDULE, GPU_ROUNDS, GPU_SCHEDULE, measure_module
from kernelgate.models.layers import Layers
from kernelgate.models.yolo import (
    YoloSpec,
    build_detection_model,
    layers_of,
    load_checkpoint,
    make_input,
    slow_down,
)
from kernelgate.plugin import screen
from kernelgate.plugin.session import NotComparedWarning, State
from kernelgate.verdict.compare import Comparison

if TYPE_CHECKING:
    from kernelgate.measure.execution import Runner


def pick_device(requested: str) -> str:
    if requested == "cpu":  # no torch for it: a process of cold starts alone never imports it
        return "cpu"
    import torch

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


P = ParamSpec("P")


def _fails_alone(
    method: Callable[Concatenate[KernelGate, P], Result],
) -> Callable[Concatenate[KernelGate, P], Result]:
    """A benchmark that raises fails alone, with its cause and a note (:mod:`kernelgate.measure.faults`)."""

    @functools.wraps(method)
    def run(self: KernelGate, /, *args: P.args, **kwargs: P.kwargs) -> Result:
        if self.state.cuda_broken and self.device.startswith("cuda"):
            pytest.fail(
                "kernelgate: not run: this process's CUDA context is unusable since "
                f"{self.state.cuda_broken}. Fix that failure, or run this benchmark alone: "
                f"pytest -k '{self.node_name}'",
                pytrace=False,
            )
        before = self.state.outcomes()
        try:
            return method(self, *args, **kwargs)
        except pytest.fail.Exception as exc:
            self._failed_before_comparing(before, exc)
            raise
        except Exception as exc:
            import torch

            broken = faults.note(torch, exc, self.node_name)
            self.state.set_cuda_broken(broken)
            self._failed_before_comparing(before, exc)
            raise

    return run


def probed(result: measure.Measurement, timed: list[float], hosted: list[float]) -> measure.Measurement:
    """``result`` with the probe before each of its timed steps: the last one before each ``wall``
    sample (pytest-benchmark's warm-up rounds ran a probe too) and before each step whose host times
    were taken; none where they do not line up (``--benchmark-disable``: no wall samples)."""

    def last(values: list[float], n: int) -> measure.Dist:
        return (
            measure.Dist(tuple(round(v, 3) for v in values[-n:]))
            if 0 < n <= len(values)
            else measure.Dist(())
        )

    hosts = {lay.time.n for lay in result.host_layers}
    return dataclasses.replace(
        result,
        cpu_probe=last(timed, result.wall.n),
        cpu_probe_host=last(hosted, hosts.pop()) if len(hosts) == 1 else measure.Dist(()),
    )


def _prober(into: list[float]) -> Callable[[], None]:
    """A probe that appends its loop's time (µs) to ``into``."""

    def probe() -> None:
        into.append(cpuspeed.loop_us())

    return probe


class KernelGate:
    """The ``kernelgate`` fixture: ``kernelgate.yolo(model="yolov8n", precision="fp16")``."""

    def __init__(self, state: State, benchmark: Any, node: pytest.Item) -> None:
        self.state = state
        self.benchmark = benchmark
        self.node = node
        self.node_name = node.name
        self.device = pick_device(state.options.device)

    @property
    def target(self) -> str:
        """This test as the argument that selects it from the folder pytest was started in."""
        config = self.node.config
        return node_target(self.node.nodeid, config.rootpath, config.invocation_params.dir)

    def _failed_before_comparing(self, before: int, exc: BaseException) -> None:
        """A benchmark that raised before it had an outcome (compared, suspected, no baseline,
        unreliable) is a case of its own: the run fails on it even where the test catches the
        exception or is marked xfail (:mod:`kernelgate.verdict.policy`)."""
        if self.state.outcomes() == before:
            text = str(getattr(exc, "msg", None) or exc).strip().splitlines()
            self.state.add_failed((self.node.nodeid, f"{type(exc).__name__}: {text[0] if text else ''}"))

    def yolo(
        self,
        model: str = "yolov8n",
        precision: str = "fp16",
        batch: int = 1,
        imgsz: int = 640,
        **axes: Any,
    ) -> Result:
        """Gate one configuration; ``axes`` are the other :class:`~kernelgate.models.yolo.YoloSpec` fields
        (``mode="graph"``, ``stage="pipeline"``, ``channels_last=True``, ``fuse=True``, ...)."""
        return self.run(YoloSpec(model=model, precision=precision, batch=batch, imgsz=imgsz, **axes))

    @_fails_alone
    def run(self, spec: YoloSpec) -> Result:
        """Gate the configuration ``spec`` (one entry of the matrix: ``kernelgate_case``)."""
        import torch

        from kernelgate.measure import execution

        net = build_detection_model(spec, self.device, trust=self.state.options.trust_pt)
        layers = layers_of(net)
        opts = self.state.options
        if opts.slow_layer:  # before capture/compilation, so that graphs and compiled code include it
            slow_down(net, opts.slow_layer, opts.slow_extra_runs)
        host_input = make_input(spec, self.device)
        with torch.no_grad():
            runner = execution.prepare(torch, net, spec, self.device, host_input)

        def build(copied: Any) -> Runner:
            with torch.no_grad():
                return execution.prepare(torch, copied, spec, self.device, host_input)

        placed = spec.mode != "compile" and self.device.startswith("cuda")
        make = placement.copier(net, build) if placed else None
        return self._run(runner, layers.adding(dict(runner.extra_layers)), spec.id, make)

    @_fails_alone
    def checkpoint(
        self,
        path: str | Path,
        precision: str = "fp16",
        batch: int = 1,
        imgsz: int = 640,
        name: str | None = None,
    ) -> Result:
        """Gate a model saved as ``.pt`` (an Ultralytics checkpoint or a whole pickled module).

        Loaded with ``torch.load(weights_only=True)`` where possible; a checkpoint that needs
        unpickling of arbitrary objects loads only with ``--kernelgate-trust-pt`` (see
        :func:`kernelgate.models.yolo.load_pt`).
        """
        spec = YoloSpec(model=Path(path).stem, precision=precision, batch=batch, imgsz=imgsz)
        net, layers = load_checkpoint(Path(path), spec, self.device, trust=self.state.options.trust_pt)
        return self.module(net, make_input(spec, self.device), layers, name=name or spec.id)

    @_fails_alone
    def module(self, net: Any, host_input: Any, layers: Layers, name: str | None = None) -> Result:
        """Gate any ``nn.Module`` called as ``net(input)``; ``layers`` names its top-level layers.

        ``name`` is the benchmark's id in reports and threshold rules (default: the test's name).
        """
        import torch

        from kernelgate.measure import execution

        opts = self.state.options
        if opts.slow_layer:
            slow_down(net, opts.slow_layer, opts.slow_extra_runs)

        def build(copied: Any) -> Runner:
            return execution.eager(torch, copied, host_input, self.device)

        make = placement.copier(net, build) if self.device.startswith("cuda") else None
        return self._run(
            execution.eager(torch, net, host_input, self.device), layers, name or self.node_name, make
        )

    def _run(
        self, runner: Runner, layers: Layers, bench_id: str, make: Callable[[], Runner] | None = None
    ) -> Result:
        import torch

        opts = self.state.options
        torch.set_num_threads(
            threads.for_device(self.device, self.state.config.threads, opts.threads_env, os.environ)[0]
        )
        gpu = self.device.startswith("cuda")
        # on a GPU, the configuration in several places of its memory (kernelgate.measure.placement);
        # without a copier (the CPU, compile mode, a net that cannot be copied) in one
        places = placement.Placements(torch, runner, make, placement.PLACEMENTS)
        trace_path = opts.out_dir / "traces" / f"{safe_name(self.node_name)}.json"
        # the CPU's speed before each timed step, whatever the code (kernelgate.verdict.probespeed)
        probes: list[float] = []
        probes_host: list[float] = []
        probe, probe_host = _prober(probes), _prober(probes_host)

        with torch.no_grad():
            for each in places.runners():
                for _ in range(3):
                    each.step()
            step = places.cycle()
            # pytest-benchmark's timing; under pytest-xdist (which switches it off) the gate's own
            rounds = GPU_ROUNDS if gpu else CPU_ROUNDS
            stats = timing.pedantic(
                self.benchmark, self.node.config, step, rounds=rounds, warmup_rounds=2, setup=probe
            )
            wall = [1e6 * t for t in stats.stats.data] if stats else []
        schedule = placement.steps(GPU_SCHEDULE if gpu else CPU_SCHEDULE, opts.iterations, places.count)
        placed = places.runner()

        def attempt() -> measure.Measurement:
            probes_host.clear()  # a second attempt times its steps again
            found = self._profile(placed, layers, bench_id, schedule, trace_path, wall, probe_host)
            return placement.averaged(found, places.count)

        result = integrity.measure_reliably(attempt, bench_id)
        if result.reliable and result.throttled:  # one more try before it goes on with a flag
            result = integrity.measure_reliably(attempt, bench_id)
        result = probed(result, probes, placement.by_step(probes_host, places.count))
        if opts.confirm_out is not None:  # a same-host round: the parent judges
            from kernelgate.plugin.samehost import record_file

            out = record_file(opts.confirm_out, self.node.nodeid)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(result.to_json()), encoding="utf-8")
            return Result(result, None, trace_path)
        self.benchmark.extra_info["kernelgate"] = result.to_json()
        self._keep(result, stats)
        if not result.reliable:
            self._unreliable(result, trace_path)
            return Result(result, None, trace_path)
        comparison = None if opts.save else self._gate(result, layers)
        return Result(result, comparison, trace_path)

    def _profile(
        self,
        runner: Runner,
        layers: Layers,
        bench_id: str,
        schedule: profile.Schedule,
        trace_path: Path,
        wall: list[float],
        probe: Callable[[], None] | None = None,
    ) -> measure.Measurement:
        """Profile once and build the record; a profiler fault fails the benchmark with its cause.
        ``probe`` runs before each step whose host times are taken."""
        import torch

        with torch.no_grad():
            try:
                return measure_module(
                    torch, runner, layers, bench_id=bench_id, device=self.device, schedule=schedule,
                    wall_us=wall, trace_path=trace_path, between=probe,
                )  # fmt: skip
            except profile.ProfilerError as exc:
                pytest.fail(f"kernelgate: {bench_id}: {exc}", pytrace=False)
            except (ValueError, OSError) as exc:
                pytest.fail(
                    f"kernelgate: {bench_id}: torch.profiler wrote a trace that cannot be read "
                    f"({shown(trace_path)}: {type(exc).__name__}: {exc}); nothing was measured.",
                    pytrace=False,
                )

    def _unreliable(self, result: measure.Measurement, trace_path: Path) -> None:
        """An unreliable profile is never compared (nor saved); fail or warn as configured."""
        self.state.add_unreliable(result.benchmark)
        message = "\n".join(
            [
                f"kernelgate: {result.benchmark} on {result.arch}: the profile cannot be trusted, so it was "
                f"not {'saved' if self.state.options.save else 'compared'}:",
                *(f"  - {reason}" for reason in result.unreliable_reasons),
                f"  trace: {shown(trace_path)}",
                "  run it again; if it persists, see docs/faults.md. To let the run go on regardless, set "
                'on_unreliable = "warn" in [tool.kernelgate] (or --kernelgate-on-unreliable=warn).',
            ]
        )
        if self.state.config.on_unreliable is Policy.FAIL:
            pytest.fail(message, pytrace=False)
        warnings.warn(message, NotComparedWarning, stacklevel=2)

    def coldstart(
        self,
        model: str = "yolov8n",
        precision: str = "fp16",
        batch: int = 1,
        imgsz: int = 640,
        scenario: str = "warm",
        runs: int = 3,
        prime: bool = True,
        mode: str = "eager",
        compile_options: Mapping[str, Any] | None = None,
        probe_kernels: int = 8,
        env: Mapping[str, str] | None = None,
    ) -> ColdStart:
        """Time ``runs`` cold starts, each in a fresh process, and gate every phase against the baseline
        (``scenario``: one of ``coldstart.scenarios.SCENARIOS``; ``mode="compile"``: torch.compile with
        ``compile_options``; ``model="ptxprobe"``: the PTX probe; ``env``: for every child)."""
        from kernelgate.plugin import coldstart

        spec = coldstart.child_spec(
            self.device, model, precision, batch, imgsz, mode, compile_options, probe_kernels
        )
        before = self.state.outcomes()
        try:
            return coldstart.run(self, spec, scenario, runs, prime, env or {})
        except (pytest.fail.Exception, Exception) as exc:
            self._failed_before_comparing(before, exc)
            raise

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
        if bench.get("params"):  # a matrix configuration is stored as its fields (JSON, readable in a diff)
            bench["params"] = {
                k: dataclasses.asdict(v) if dataclasses.is_dataclass(v) and not isinstance(v, type) else v
                for k, v in bench["params"].items()
            }
        self.state.add_measured(baseline.Entry(self.benchmark.fullname, result, bench))

    def _gate(self, result: measure.Measurement, layers: Layers) -> Comparison | None:
        return screen.gate(self, result, layers)

    def baseline_entry(self, result: measure.Measurement) -> tuple[baseline.Entry, Path] | None:
        """This benchmark's baseline for this GPU (:func:`kernelgate.plugin.screen.baseline_entry`)."""
        return screen.baseline_entry(self, result)
