"""``SUMMARY.md`` beside every baseline file: what a reviewer reads of a re-record.

Written with every save (``--kernelgate-save``, ``--kernelgate-append``, ``kernelgate record``,
``kernelgate baseline migrate``) from the file's records: per configuration (in the order of the
benchmark ids) the total and each layer (each phase of a cold start) with its median over every
profiled iteration of every round and its round spread, the rounds, the hosts that recorded them and
the software. Medians have 3 significant digits (the last one is 0.1 … 1 % of the value), so a
figure that a re-record moved by less than that mostly keeps its line, and each row names its
configuration, so that every changed line of ``git diff`` says what moved, from what to what.
:mod:`kernelgate.baseline.review` compares two files the same way (``kernelgate baseline diff``).

The round spread is the distance from the median within which the median of the majority of rounds
(separate processes) lies, in % of the median (:func:`kernelgate.baseline.rounds.majority_spread`):
the noise the gate allows for. It reads ``—`` for a figure of one round.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelgate.baseline.rounds import majority_distance
from kernelgate.config import Scope
from kernelgate.machine.fingerprint import RecordedHosts, hosts_from_json
from kernelgate.machine.software import cudnn_version
from kernelgate.measure.results import Dist
from kernelgate.units import DASH, device_time, duration

FILE = "SUMMARY.md"
DIGITS = 3
COLDSTART_KEY = "kernelgate_coldstart"  # kernelgate.coldstart.verdict.EXTRA_KEY (a layer above)
COLDSTART_TOTAL = "to_steady_state"  # kernelgate.coldstart.phases.TOTAL
# kernelgate.coldstart.phases.PHASES, in the order a cold start runs them (a test checks they agree)
PHASES = (
    "startup", "import_torch", "import_model", "load_driver", "cuda_init", "build", "load_cache", "compile",
    "module_load", "first_inference", "first_launch", "to_steady",
)  # fmt: skip
SOFTWARE = (("gpu", ""), ("driver", "driver "), ("cuda", "CUDA "), ("cudnn", "cuDNN "), ("torch", "torch "),
            ("ultralytics", "ultralytics "))  # fmt: skip


def path_for(path: Path) -> Path:
    """The summary of baseline file ``path``: ``SUMMARY.md`` in its folder."""
    return path.with_name(FILE)


@dataclass(frozen=True)
class Figure:
    """One summarized figure: ``key`` identifies it across files (``total``, a layer, a phase)."""

    key: str
    label: str
    scope: Scope
    median_us: float
    spread_pct: float | None  # None: one round, or no rounds known

    @property
    def spread(self) -> str:
        return DASH if self.spread_pct is None else f"{self.spread_pct:.1f} %"


@dataclass(frozen=True)
class Configuration:
    """One benchmark of a baseline file, summarized."""

    fullname: str
    benchmark: str
    arch: str
    rounds: int
    iterations: int
    wall_us: float | None
    hosts: RecordedHosts
    software: str
    figures: tuple[Figure, ...]
    cold: bool
    placements: int = 1  # places of GPU memory each iteration was averaged over (measure.placement)

    def figure(self, key: str) -> Figure | None:
        return next((f for f in self.figures if f.key == key), None)

    @property
    def total(self) -> Figure:
        return self.figures[0]

    @property
    def host_ids(self) -> str:
        """``3f2a9c1e (3 rounds)``, the rounds without a fingerprint, or ``unknown``."""
        parts = [f"`{h.id}` ({n} round{'s' * (n != 1)})" for h, n in zip(self.hosts.hosts, self.hosts.rounds,
                                                                          strict=True)]  # fmt: skip
        if self.hosts.unknown:
            parts.append(f"{self.hosts.unknown} round{'s' * (self.hosts.unknown != 1)} of an unknown host")
        return ", ".join(parts) or "unknown"


def _round_medians(dist: Mapping[str, Any]) -> list[float] | None:
    """The round medians the main file writes, or those of the samples of a full record."""
    medians = dist.get("round_medians")
    if medians is None and isinstance(dist.get("samples"), list):
        medians = list(Dist.from_json(dist).round_medians)
    return medians if isinstance(medians, list) else None


def _spread(dist: Mapping[str, Any]) -> float | None:
    medians = _round_medians(dist)
    median = float(dist["median"])
    if not isinstance(medians, list) or len(medians) < 2 or not median:
        return None
    return 100.0 * majority_distance([float(m) for m in medians], median) / median


def _figure(key: str, label: str, scope: Scope, dist: Mapping[str, Any]) -> Figure:
    return Figure(key, label, scope, float(dist["median"]), _spread(dist))


def _software(environment: Mapping[str, Any]) -> str:
    parts = []
    for key, prefix in SOFTWARE:
        value = environment.get(key)
        if value:
            parts.append(prefix + (cudnn_version(str(value)) if key == "cudnn" else str(value)))
    return ", ".join(parts)


def configuration(bench: Mapping[str, Any]) -> Configuration:
    """The summary of one benchmark of a baseline document (its main part or its full record)."""
    record = bench["extra_info"]["kernelgate"]
    arch = str(record["arch"])
    total = record["total_us"]
    rounds = len(total.get("rounds") or ()) or 1
    cold = bench["extra_info"].get(COLDSTART_KEY)
    if isinstance(cold, Mapping):
        figures = [_figure(COLDSTART_TOTAL, "launch to steady state", Scope.PHASE, total)]
        phases = cold.get("median_ms") or {}
        order = [p for p in PHASES if p in phases] + sorted(set(phases) - {*PHASES, COLDSTART_TOTAL})
        figures += [
            Figure(str(name), str(name), Scope.PHASE, 1e3 * float(phases[name]), None)
            for name in order
            if phases[name] is not None
        ]
    else:
        figures = [_figure("total", f"total {device_time(arch)}", Scope.TOTAL, total)]
        figures += [
            _figure(
                str(lay["name"]),
                f"`{lay['name']}` {lay.get('type', '')}".rstrip(),
                Scope.LAYER,
                lay["time_us"],
            )
            for lay in record.get("layers", ())
        ]
    wall = record.get("wall_us") or {}
    return Configuration(
        fullname=str(bench["fullname"]),
        benchmark=str(record["benchmark"]),
        arch=arch,
        rounds=rounds,
        iterations=int(record.get("iterations", 0)),
        wall_us=float(wall["median"]) if wall.get("n") else None,
        hosts=RecordedHosts.of(hosts_from_json(record.get("hosts"), rounds) or (None,) * rounds),
        software=_software(record.get("environment") or {}),
        figures=tuple(figures),
        cold=isinstance(cold, Mapping),
        placements=int(record.get("placements", 1)),
    )


def configurations(benchmarks: Iterable[Mapping[str, Any]]) -> list[Configuration]:
    """Every benchmark that holds a kernelgate record, summarized, in the order of benchmark ids."""
    found = [
        configuration(b)
        for b in benchmarks
        if isinstance((b.get("extra_info") or {}).get("kernelgate"), Mapping)
    ]
    return sorted(found, key=lambda c: (c.benchmark, c.fullname))


def median(us: float | None) -> str:
    return duration(us, digits=DIGITS)


def _section(c: Configuration) -> list[str]:
    per = "run" if c.cold else "iteration"
    shape = f"{c.rounds} round{'s' * (c.rounds != 1)}, {c.iterations} {per}{'s' * (c.iterations != 1)} in all"
    lines = [
        f"## {c.benchmark}",
        "",
        f"`{c.fullname}`: {shape}; hosts {c.host_ids}; {c.software or 'software unknown'}.",
        "",
        "| configuration | figure | median | round spread |",
        "|---|---|--:|--:|",
    ]
    lines += [f"| {c.benchmark} | {f.label} | {median(f.median_us)} | {f.spread} |" for f in c.figures]
    return [*lines, ""]


def _hosts(configs: Sequence[Configuration]) -> list[str]:
    every = RecordedHosts()
    for c in configs:
        every += c.hosts
    if not every.hosts:
        return ["No round carries a host fingerprint (recorded by a kernelgate before them).", ""]
    return ["## Hosts", "", *(f"- `{h.id}`: {h.describe()}" for h in every.hosts), ""]


def render(document: Mapping[str, Any], file_name: str) -> str:
    """SUMMARY.md of a baseline document (the main file's content, or the full records)."""
    configs = configurations(document.get("benchmarks") or ())
    arch = str((document.get("kernelgate") or {}).get("arch", ""))
    commit = document.get("commit_info") or {}
    sha = str(commit.get("id") or "")[:12] or "unknown"
    lines = [
        f"# kernelgate baseline: {arch}",
        "",
        f"Written by kernelgate with every save of `{file_name}`; do not edit (`kernelgate baseline diff "
        "OLD NEW` compares two files). Medians over every profiled iteration of every round (a cold "
        "start: over its runs), 3 significant digits; round spread: how far from the median the median "
        "of the majority of rounds (separate processes) lies, the noise the gate allows for.",
        "",
        f"Recorded at commit `{sha}`{' (with uncommitted changes)' if commit.get('dirty') else ''}.",
        "",
        "| configuration | total | round spread | wall | rounds | hosts |",
        "|---|--:|--:|--:|--:|---|",
    ]
    lines += [
        f"| {c.benchmark} | {median(c.total.median_us)} | {c.total.spread} | {median(c.wall_us)} | "
        f"{c.rounds} | {c.host_ids} |"
        for c in configs
    ]
    lines.append("")
    for c in configs:
        lines += _section(c)
    return "\n".join(lines + _hosts(configs)).rstrip() + "\n"
