"""The measurement record of one benchmark: total, per-layer and per-kernel time per iteration.

Every figure keeps its per-iteration samples (µs), so a later verdict can test significance.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from kernelgate.machine.fingerprint import HostFingerprint, hosts_from_json
from kernelgate.machine.state import throttle_reasons

if TYPE_CHECKING:
    pass


def _r(value: float) -> float:
    return round(float(value), 3)


@dataclass(frozen=True)
class Dist:
    """Per-iteration values in microseconds, from one or more rounds (separate processes).

    ``rounds`` holds the number of samples of each round, in order; empty means a single round.
    """

    samples: tuple[float, ...]
    rounds: tuple[int, ...] = ()

    @property
    def n(self) -> int:
        return len(self.samples)

    def round_samples(self) -> list[tuple[float, ...]]:
        sizes = self.rounds or (len(self.samples),)
        out, start = [], 0
        for size in sizes:
            out.append(self.samples[start : start + size])
            start += size
        return out

    @property
    def round_medians(self) -> tuple[float, ...]:
        return tuple(statistics.median(r) if r else 0.0 for r in self.round_samples())

    @staticmethod
    def concat(dists: Sequence[Dist]) -> Dist:
        """The rounds of ``dists`` one after the other."""
        sizes = tuple(size for d in dists for size in (d.rounds or (d.n,)))
        return Dist(tuple(s for d in dists for s in d.samples), sizes if len(sizes) > 1 else ())

    @cached_property
    def _sorted(self) -> tuple[float, ...]:
        return tuple(sorted(self.samples))

    @cached_property
    def median(self) -> float:
        return statistics.median(self._sorted) if self.samples else 0.0

    def quantile(self, q: float) -> float:
        """The q-th percentile (q in hundredths), as ``statistics.quantiles(samples, n=100,
        method="inclusive")[round(100 q) - 1]`` computes it, the same arithmetic for one cut point
        instead of 99 (a report computes it for every layer and kernel of every benchmark)."""
        data = self._sorted
        if len(data) < 2:
            return self.median
        j, delta = divmod(round(q * 100) * (len(data) - 1), 100)
        return (data[j] * (100 - delta) + data[j + 1] * delta) / 100

    def to_json(self) -> dict[str, Any]:
        return {
            "median": _r(self.median),
            "n": self.n,
            "p10": _r(self.quantile(0.10)),
            "p90": _r(self.quantile(0.90)),
            "samples": [_r(s) for s in self.samples],
        } | ({"rounds": list(self.rounds)} if self.rounds else {})

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Dist:
        samples = tuple(map(float, data["samples"]))
        rounds = tuple(int(r) for r in data.get("rounds", ()))
        if rounds and sum(rounds) != len(samples):
            raise ValueError(f"rounds {list(rounds)} do not add up to the {len(samples)} samples")
        return cls(samples, rounds)


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
    gpu_states: tuple[Mapping[str, str], ...] = ()

    @property
    def throttled(self) -> bool:
        """Whether NVML reported a slowdown reason (power cap, thermal, HW brake) in any round."""
        return any(throttle_reasons(state) for state in self.gpu_states)

    # Why the profile cannot be trusted (dropped events, ...): see kernelgate.measure.integrity.
    # Empty = reliable.
    unreliable_reasons: tuple[str, ...] = ()
    # Top-level layer -> layer group (backbone, neck, head, ...: kernelgate.models.groups). Optional: a
    # record written before groups existed has none.
    groups: Mapping[str, str] = field(default_factory=dict)
    hosts: tuple[HostFingerprint | None, ...] = ()  # see round_hosts; () where no round has one
    # the host side of each top-level layer (kernelgate.measure.hosttime): its forward's time on the
    # CPU per iteration, and its waiting/copying runtime calls per iteration (layer -> call -> calls).
    # Optional: records before they existed have neither.
    host_layers: tuple[LayerStat, ...] = ()
    host_calls: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    # a fixed loop timed before each step (kernelgate.machine.cpuspeed.loop_us): the speed of the CPU
    # the step ran on, whatever the code; one per ``wall`` sample (``cpu_probe``) and one per step whose
    # host times were taken (``cpu_probe_host``), in order; the same-host judge reads them
    # (kernelgate.verdict.probespeed). Optional: records before they existed have none.
    cpu_probe: Dist = field(default_factory=lambda: Dist(()))
    cpu_probe_host: Dist = field(default_factory=lambda: Dist(()))
    # in how many places of GPU memory each iteration was measured and averaged
    # (kernelgate.measure.placement); records before placements were measured in one
    placements: int = 1

    @property
    def round_hosts(self) -> tuple[HostFingerprint | None, ...]:
        """The host of each round (machine.fingerprint); None for a round of an older kernelgate."""
        return self.hosts or (None,) * (len(self.total.rounds) or 1)

    @property
    def reliable(self) -> bool:
        return not self.unreliable_reasons

    @property
    def host_overhead_us(self) -> float:
        """Median wall latency minus median device-busy time: launch and Python overhead."""
        return max(0.0, self.wall.median - self.busy.median)

    def layer(self, name: str) -> LayerStat | None:
        return next((lay for lay in self.layers if lay.name == name), None)

    def host_layer(self, name: str) -> LayerStat | None:
        return next((lay for lay in self.host_layers if lay.name == name), None)

    def to_json(self) -> dict[str, Any]:
        return (
            {
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
            | ({"gpu_states": [dict(sorted(g.items())) for g in self.gpu_states]} if self.gpu_states else {})
            | ({"groups": dict(sorted(self.groups.items()))} if self.groups else {})
            | ({"hosts": [h and h.to_json() for h in self.hosts]} if any(self.hosts) else {})
            | ({"host_layers": [lay.to_json() for lay in self.host_layers]} if self.host_layers else {})
            | ({"host_calls": _calls_json(self.host_calls)} if self.host_calls else {})
            | ({"cpu_probe_us": self.cpu_probe.to_json()} if self.cpu_probe.n else {})
            | ({"cpu_probe_host_us": self.cpu_probe_host.to_json()} if self.cpu_probe_host.n else {})
            | ({"placements": self.placements} if self.placements != 1 else {})
        )

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
            gpu_states=tuple({str(k): str(v) for k, v in g.items()} for g in data.get("gpu_states", ())),
            unreliable_reasons=_reasons(data),
            groups=_groups(data),
            hosts=hosts_from_json(data.get("hosts"), len(data["total_us"].get("rounds", ())) or 1),
            host_layers=tuple(LayerStat.from_json(d) for d in data.get("host_layers", ())),
            host_calls={
                str(layer): {str(k): float(v) for k, v in calls.items()}
                for layer, calls in data.get("host_calls", {}).items()
            },
            cpu_probe=_optional(data, "cpu_probe_us"),
            cpu_probe_host=_optional(data, "cpu_probe_host_us"),
            placements=int(data.get("placements", 1)),
        )


def _calls_json(calls: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    return {layer: {k: _r(v) for k, v in sorted(c.items())} for layer, c in sorted(calls.items())}


def _zeros_for(dist: Dist) -> Dist:
    return Dist((0.0,) * dist.n, dist.rounds)


def _combine_named(groups: Sequence[dict[str, Any]], totals: Sequence[Dist]) -> list[tuple[Any, Dist]]:
    """Concatenate the rounds of each named item; a round without the item counts zeros."""
    names: list[str] = []
    for group in groups:
        names += [n for n in group if n not in names]
    out = []
    for name in names:
        first = next(g[name] for g in groups if name in g)
        dists = [g[name].time if name in g else _zeros_for(t) for g, t in zip(groups, totals, strict=True)]
        out.append((first, Dist.concat(dists)))
    return out


def combine(rounds: Sequence[Measurement]) -> Measurement:
    """One measurement from several rounds (separate processes) of the same benchmark."""
    if not rounds:
        raise ValueError("combine() needs at least one measurement")
    if len(rounds) == 1:
        return rounds[0]
    if len({m.placements for m in rounds}) > 1:
        raise ValueError(
            f"rounds measured in {[m.placements for m in rounds]} places of GPU memory do not combine"
        )
    totals = [m.total for m in rounds]
    layers = _combine_named([{lay.name: lay for lay in m.layers} for m in rounds], totals)
    host_layers = _combine_named([{lay.name: lay for lay in m.host_layers} for m in rounds], totals)
    kernel_maps = [{k.key: k for k in m.kernels} for m in rounds]
    kernels = _combine_named(kernel_maps, totals)
    first = rounds[0]
    hosts = tuple(h for m in rounds for h in m.round_hosts)
    return Measurement(
        benchmark=first.benchmark,
        arch=first.arch,
        device=first.device,
        iterations=sum(m.iterations for m in rounds),
        total=Dist.concat(totals),
        busy=Dist.concat([m.busy for m in rounds]),
        wall=Dist.concat([m.wall for m in rounds]),
        layers=tuple(LayerStat(lay.name, lay.type, dist) for lay, dist in layers),
        kernels=tuple(
            KernelStat(
                k.layer,
                k.module,
                k.name,
                dist,
                sum(km[k.key].calls for km in kernel_maps if k.key in km) / len(rounds),
                k.launch,
            )
            for k, dist in kernels
        ),
        environment=first.environment,
        unlinked=sum(m.unlinked for m in rounds),
        gpu_states=tuple(g for m in rounds for g in m.gpu_states),
        unreliable_reasons=tuple(dict.fromkeys(r for m in rounds for r in m.unreliable_reasons)),
        groups={k: v for m in reversed(rounds) for k, v in m.groups.items()},
        hosts=hosts if any(hosts) else (),
        host_layers=tuple(LayerStat(lay.name, lay.type, dist) for lay, dist in host_layers),
        host_calls=_mean_calls([m.host_calls for m in rounds]),
        # one probe distribution a round, empty for the rounds of a kernelgate before the probe
        cpu_probe=_probes([(m.cpu_probe, m.total) for m in rounds]),
        cpu_probe_host=_probes([(m.cpu_probe_host, m.total) for m in rounds]),
        placements=first.placements,
    )


def _optional(data: Mapping[str, Any], key: str) -> Dist:
    """An optional distribution of a record (records before it existed have none)."""
    return Dist.from_json(data[key]) if key in data else Dist(())


def _probes(rounds: Sequence[tuple[Dist, Dist]]) -> Dist:
    """Each round's probes one after the other, ``(probes, a figure of the same rounds)`` a measurement:
    an empty round for each round of a measurement without probes (a baseline recorded before them,
    to which a runner appends rounds that have them: the runner's own rounds keep theirs, which
    :func:`kernelgate.baseline.ownrounds.rounds_of` selects); none where no round has any, or where a
    measurement's probes do not line up with its rounds."""
    if not any(probe.n for probe, _ in rounds):
        return Dist(())
    parts: list[Dist] = []
    for probe, figure in rounds:
        count = len(figure.round_samples())
        if not probe.n:
            parts.append(Dist((), (0,) * count))
        elif len(probe.round_samples()) == count:
            parts.append(probe)
        else:
            return Dist(())
    return Dist.concat(parts)


def _mean_calls(rounds: Sequence[Mapping[str, Mapping[str, float]]]) -> dict[str, dict[str, float]]:
    """Calls per iteration over rounds (a round without a call counts zero), like kernels' launches."""
    out: dict[str, dict[str, float]] = {}
    for calls in rounds:
        for layer, items in calls.items():
            for name, n in items.items():
                out.setdefault(layer, {})[name] = out.get(layer, {}).get(name, 0.0) + n / len(rounds)
    return out


def _groups(data: Mapping[str, Any]) -> dict[str, str]:
    """``groups`` is optional (records before it existed have none): layer name -> group name."""
    groups = data.get("groups", {})
    if not isinstance(groups, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in groups.items()
    ):
        raise ValueError("'groups' must map layer names to group names (strings)")
    return dict(groups)


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
