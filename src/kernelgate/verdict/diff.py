"""The reviewable diff of one benchmark: every layer's delta, the kernels behind it, hints, environment.

Built from a :class:`~kernelgate.verdict.compare.Comparison` and the two measurements it compared; the
Markdown, HTML and JSON reports render this and nothing else. A verdict counts as failing when the
comparison fails on it (``Comparison.fail_on``), so a verdict added to compare.py later renders
without changes here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kernelgate.config import Scope
from kernelgate.machine.software import cudnn_version
from kernelgate.measure.grouped import group_times
from kernelgate.measure.results import Measurement
from kernelgate.measure.timesplit import TimeSplit, split
from kernelgate.models.groups import ordered
from kernelgate.verdict.compare import Comparison, Delta, Verdict
from kernelgate.verdict.hints import Hint, benchmark_hints, layer_hints

# Software and hardware that decide which kernels run: a change here explains many regressions.
ENVIRONMENT_KEYS = {
    "gpu": "GPU",
    "compute_capability": "compute capability",
    "driver": "driver",
    "cuda": "CUDA",
    "cudnn": "cuDNN",
    "torch": "torch",
    "ultralytics": "ultralytics",
    "python": "Python",
    "cudnn_benchmark": "cudnn.benchmark",
    "torch_threads": "torch threads",
    "kernelgate": "kernelgate",
    "pytest-benchmark": "pytest-benchmark",
    "device": "device",
    "cpu": "CPU",
    "platform": "platform",
}
# Read from the GPU at the end of a run: they differ between any two runs.
VOLATILE_KEYS = {
    "sm_clock_mhz": "SM clock (MHz)",
    "sm_clock_max_mhz": "max SM clock (MHz)",
    "mem_clock_mhz": "memory clock (MHz)",
    "temperature_c": "temperature (°C)",
    "power_w": "power (W)",
    "power_limit_w": "power limit (W)",
    "clock_event_reasons": "clock-event reasons",
    "pinned_gpu": "GPU of the pytest-xdist worker",  # whichever worker ran it: any GPU of the runner
}


@dataclass(frozen=True)
class LayerDiff:
    """The total or one top-level layer: its delta, the kernels below it and hints where the data has one."""

    delta: Delta
    type: str
    failing: bool
    kernels: tuple[Delta, ...] = ()
    hints: tuple[Hint, ...] = ()

    @property
    def changed_kernels(self) -> tuple[Delta, ...]:
        return tuple(k for k in self.kernels if k.verdict is not Verdict.UNCHANGED)


@dataclass(frozen=True)
class EnvChange:
    key: str
    label: str
    baseline: str | None
    current: str | None
    volatile: bool

    @property
    def changed(self) -> bool:
        return self.baseline != self.current


@dataclass(frozen=True)
class HistoryPoint:
    label: str
    total_us: float
    layers: Mapping[str, float]


@dataclass(frozen=True)
class TracePair:
    """Paths (relative to the report folder) of the Chrome traces of a regressed benchmark."""

    baseline: str | None
    current: str | None
    note: str = ""


@dataclass(frozen=True)
class GroupDiff:
    """The time of one layer group (backbone, neck, head, ...: :mod:`kernelgate.models.groups`), medians in
    µs: kernel time, or CPU operator time on a CPU run.

    Not gated: the layers and kernels are; a group shows where in the model the time moved.
    """

    name: str
    baseline_us: float | None
    current_us: float | None

    @property
    def delta_pct(self) -> float | None:
        if self.baseline_us is None or self.current_us is None or self.baseline_us <= 0:
            return None
        return 100.0 * (self.current_us - self.baseline_us) / self.baseline_us


def group_diffs(base: Measurement, current: Measurement) -> tuple[GroupDiff, ...]:
    before, after = group_times(base), group_times(current)
    return tuple(
        GroupDiff(g, before[g].median if g in before else None, after[g].median if g in after else None)
        for g in ordered({*before, *after})
    )


@dataclass(frozen=True)
class BenchmarkDiff:
    comparison: Comparison
    base: Measurement
    current: Measurement
    total: LayerDiff
    layers: tuple[LayerDiff, ...]
    stray_kernels: tuple[Delta, ...]
    hints: tuple[Hint, ...]
    environment: tuple[EnvChange, ...]
    history: tuple[HistoryPoint, ...] = ()
    traces: TracePair | None = None
    groups: tuple[GroupDiff, ...] = ()

    @property
    def benchmark(self) -> str:
        return self.comparison.benchmark

    @property
    def arch(self) -> str:
        return self.comparison.arch

    @property
    def failed(self) -> bool:
        return self.comparison.failed

    @property
    def failing_layers(self) -> tuple[LayerDiff, ...]:
        """The failing layers, the origin of the regression first (kernelgate.verdict.origin)."""
        failing = [lay for lay in self.layers if lay.failing]
        return tuple(sorted(failing, key=lambda lay: lay.delta.name not in self.comparison.origins))

    @property
    def improved_layers(self) -> tuple[LayerDiff, ...]:
        return tuple(lay for lay in self.layers if not lay.failing and lay.delta.verdict is Verdict.IMPROVED)

    @property
    def other_layers(self) -> tuple[LayerDiff, ...]:
        return tuple(
            lay for lay in self.layers if not lay.failing and lay.delta.verdict is not Verdict.IMPROVED
        )

    @property
    def base_split(self) -> TimeSplit | None:
        return split(self.base)

    @property
    def current_split(self) -> TimeSplit | None:
        return split(self.current)

    @property
    def environment_changed(self) -> tuple[EnvChange, ...]:
        return tuple(e for e in self.environment if e.changed and not e.volatile)


def environment_diff(base: Mapping[str, str], current: Mapping[str, str]) -> tuple[EnvChange, ...]:
    def shown(key: str, value: str | None) -> str | None:
        return cudnn_version(value) if key == "cudnn" and value is not None else value

    keys = [k for k in ENVIRONMENT_KEYS if k in base or k in current]
    keys += sorted(k for k in {*base, *current} if k not in ENVIRONMENT_KEYS and k not in VOLATILE_KEYS)
    changes = [
        EnvChange(k, ENVIRONMENT_KEYS.get(k, k), shown(k, base.get(k)), shown(k, current.get(k)), False)
        for k in keys
    ]
    changes += [
        EnvChange(k, label, base.get(k), current.get(k), True)
        for k, label in VOLATILE_KEYS.items()
        if k in base or k in current
    ]
    return tuple(changes)


def history_points(
    history: Sequence[tuple[str, Measurement]], base: Measurement, current: Measurement
) -> tuple[HistoryPoint, ...]:
    """Older baselines, then the baseline compared against, then this run; empty without older ones."""
    if not history:
        return ()
    points = [*history, ("baseline", base), ("current", current)]
    return tuple(
        HistoryPoint(label, m.total.median, {lay.name: lay.time.median for lay in m.layers})
        for label, m in points
    )


def build(
    comparison: Comparison,
    base: Measurement,
    current: Measurement,
    history: Sequence[tuple[str, Measurement]] = (),
) -> BenchmarkDiff:
    failing = set(comparison.failures)
    types = {lay.name: lay.type for lay in base.layers} | {lay.name: lay.type for lay in current.layers}

    failing_layers = {d.name for d in comparison.failures if d.scope is Scope.LAYER}
    stray = tuple(d for d in comparison.failures if d.scope is Scope.KERNEL and d.layer not in failing_layers)
    explain = failing_layers | {d.layer for d in stray}

    def layer(delta: Delta) -> LayerDiff:
        return LayerDiff(
            delta=delta,
            type=types.get(delta.name, ""),
            failing=delta in failing,
            kernels=comparison.kernels_of(delta.name),
            hints=layer_hints(delta.name, base, current) if delta.name in explain else (),
        )

    (total,) = comparison.of(Scope.TOTAL)
    layers = tuple(layer(d) for d in comparison.of(Scope.LAYER))
    return BenchmarkDiff(
        comparison=comparison,
        base=base,
        current=current,
        total=LayerDiff(total, "", total in failing),
        layers=layers,
        stray_kernels=stray,
        hints=benchmark_hints(base, current) if comparison.failed else (),
        environment=environment_diff(base.environment, current.environment),
        history=history_points(history, base, current),
        groups=group_diffs(base, current),
    )
