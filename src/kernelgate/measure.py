"""The measurement record of one benchmark: total, per-layer and per-kernel time per iteration.

Every figure keeps its per-iteration samples (µs), so a later verdict can test significance.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd


def _r(value: float) -> float:
    return round(float(value), 3)


@dataclass(frozen=True)
class Dist:
    """Per-iteration values in microseconds."""

    samples: tuple[float, ...]

    @property
    def n(self) -> int:
        return len(self.samples)

    @property
    def median(self) -> float:
        return statistics.median(self.samples) if self.samples else 0.0

    def quantile(self, q: float) -> float:
        if len(self.samples) < 2:
            return self.median
        cuts = statistics.quantiles(self.samples, n=100, method="inclusive")
        return cuts[round(q * 100) - 1]

    def to_json(self) -> dict[str, Any]:
        return {
            "median": _r(self.median),
            "n": self.n,
            "p10": _r(self.quantile(0.10)),
            "p90": _r(self.quantile(0.90)),
            "samples": [_r(s) for s in self.samples],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Dist:
        return cls(tuple(float(s) for s in data["samples"]))


@dataclass(frozen=True)
class LayerStat:
    name: str
    type: str
    time: Dist

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "time_us": self.time.to_json()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LayerStat:
        return cls(str(data["name"]), str(data["type"]), Dist.from_json(data["time_us"]))


@dataclass(frozen=True)
class KernelStat:
    layer: str
    module: str
    name: str
    time: Dist
    calls: float
    launch: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.module} :: {self.name}"

    def to_json(self) -> dict[str, Any]:
        return {
            "layer": self.layer,
            "module": self.module,
            "name": self.name,
            "calls_per_iter": _r(self.calls),
            "launch": dict(self.launch),
            "time_us": self.time.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> KernelStat:
        return cls(
            str(data["layer"]),
            str(data["module"]),
            str(data["name"]),
            Dist.from_json(data["time_us"]),
            float(data["calls_per_iter"]),
            dict(data.get("launch", {})),
        )


@dataclass(frozen=True)
class Measurement:
    benchmark: str
    arch: str
    device: str
    iterations: int
    total: Dist
    busy: Dist
    wall: Dist
    layers: tuple[LayerStat, ...]
    kernels: tuple[KernelStat, ...]
    environment: Mapping[str, str]
    unlinked: int = 0
    # Why the profile cannot be trusted (dropped events, ...): see kernelgate.integrity. Empty = reliable.
    unreliable_reasons: tuple[str, ...] = ()

    @property
    def reliable(self) -> bool:
        return not self.unreliable_reasons

    @property
    def host_overhead_us(self) -> float:
        """Median wall latency minus median device-busy time: launch and Python overhead."""
        return max(0.0, self.wall.median - self.busy.median)

    def layer(self, name: str) -> LayerStat | None:
        return next((lay for lay in self.layers if lay.name == name), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "arch": self.arch,
            "device": self.device,
            "iterations": self.iterations,
            "unlinked_kernels": self.unlinked,
            "total_us": self.total.to_json(),
            "busy_us": self.busy.to_json(),
            "wall_us": self.wall.to_json(),
            "host_overhead_us": _r(self.host_overhead_us),
            "environment": dict(sorted(self.environment.items())),
            "layers": [lay.to_json() for lay in self.layers],
            "kernels": [k.to_json() for k in self.kernels],
            "reliable": self.reliable,
            "unreliable_reasons": list(self.unreliable_reasons),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Measurement:
        return cls(
            benchmark=str(data["benchmark"]),
            arch=str(data["arch"]),
            device=str(data["device"]),
            iterations=int(data["iterations"]),
            total=Dist.from_json(data["total_us"]),
            busy=Dist.from_json(data["busy_us"]),
            wall=Dist.from_json(data["wall_us"]),
            layers=tuple(LayerStat.from_json(d) for d in data["layers"]),
            kernels=tuple(KernelStat.from_json(d) for d in data["kernels"]),
            environment={str(k): str(v) for k, v in data.get("environment", {}).items()},
            unlinked=int(data.get("unlinked_kernels", 0)),
            unreliable_reasons=_reasons(data),
        )


def _reasons(data: Mapping[str, Any]) -> tuple[str, ...]:
    """``reliable`` and ``unreliable_reasons`` are optional (records before they existed are read as
    reliable); ``reliable: false`` without a reason still reads as unreliable."""
    reliable = data.get("reliable", True)
    reasons = data.get("unreliable_reasons", [])
    if not isinstance(reliable, bool) or not isinstance(reasons, list):
        raise ValueError("'reliable' must be true or false and 'unreliable_reasons' a list")
    if not reliable and not reasons:
        return ("marked unreliable, no reason given",)
    if reliable and reasons:
        raise ValueError("'reliable' is true but 'unreliable_reasons' is not empty")
    return tuple(str(r) for r in reasons)


def _per_iteration(series: pd.Series[float], iterations: int) -> Dist:
    return Dist(tuple(float(v) for v in series.reindex(range(iterations), fill_value=0.0)))


def build(
    frame: pd.DataFrame,
    *,
    benchmark: str,
    arch: str,
    device: str,
    iterations: int,
    wall_us: Sequence[float],
    environment: Mapping[str, str],
    unlinked: int = 0,
) -> Measurement:
    """Aggregate attributed activities (see :func:`kernelgate.attribute.attribute`) per iteration."""
    from kernelgate.attribute import busy_us

    total = _per_iteration(frame.groupby("iteration")["dur_us"].sum(), iterations)
    busy = _per_iteration(busy_us(frame), iterations)

    order = frame.groupby("layer")["start_us"].min().sort_values().index
    layer_types = frame.drop_duplicates("layer").set_index("layer")["layer_type"]
    per_layer = frame.groupby(["layer", "iteration"])["dur_us"].sum()
    layers = tuple(
        LayerStat(str(name), str(layer_types[name]), _per_iteration(per_layer[name], iterations))
        for name in order
    )

    kernels = []
    grouped = frame.groupby(["layer", "module", "kernel"], sort=False)
    for (layer, module, kernel), group in grouped:
        first = group.iloc[0]
        launch = (
            {
                "grid": first["grid"],
                "block": first["block"],
                "registers": int(first["registers"]),
                "shared_memory": int(first["shared_memory"]),
                "occupancy_pct": float(first["occupancy_pct"]),
            }
            if first["grid"]
            else {}
        )
        kernels.append(
            KernelStat(
                layer=str(layer),
                module=str(module),
                name=str(kernel),
                time=_per_iteration(group.groupby("iteration")["dur_us"].sum(), iterations),
                calls=len(group) / iterations,
                launch=launch,
            )
        )
    return Measurement(
        benchmark=benchmark,
        arch=arch,
        device=device,
        iterations=iterations,
        total=total,
        busy=busy,
        wall=Dist(tuple(float(w) for w in wall_us)),
        layers=layers,
        kernels=tuple(kernels),
        environment=environment,
        unlinked=unlinked,
    )
