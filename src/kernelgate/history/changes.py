"""Step changes in the history: per configuration, per layer and in the total.

The detector is Apache Otava's (``apache-otava``, formerly Hunter): E-Divisive means over sliding
windows, weak change points kept at ten times the p-value, then merged until each left is
significant by a two-sided t-test (``max_pvalue``) and larger than ``min_magnitude``. The magnitude
is the gate's own threshold of that figure (``layer_threshold``, ``total_threshold``, the rules of
``[tool.kernelgate]``), and a change must also be over its floor (``floor_us``): the history reports
what a pull request's gate would have failed, had it been one change.

Each change names its last good and first bad night, its size (the means of the segments either
side) with a 95 % confidence interval (Welch's t, ``scipy.stats``), Otava's p-value, and what else
changed between those two nights: the host (GPU, CPU, driver: the fingerprint's id), the runner's
software (driver, CUDA, torch, cuDNN, Triton) or other packages. A change whose nights differ in host
or runner software, or that has no commit between its nights, is the runner's: it is said so and
not bisected.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kernelgate.config import GateConfig, Scope
from kernelgate.history.nights import SOFTWARE_OF_RUNNER, TOTAL, Night
from kernelgate.units import duration

DEFAULT_PVALUE = 0.001
DEFAULT_WINDOW = 50  # Otava's default: nights in one E-Divisive window
MIN_NIGHTS = 6  # fewer nights of a figure: no change point is looked for
INSTALL = "pip install 'kernelgate[history]'"


class DetectorMissing(RuntimeError):
    """Apache Otava is not installed."""


@dataclass(frozen=True)
class NightRef:
    """A night as a change names it: its place in the history, commit and date."""

    index: int
    commit: str
    date: str

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "commit": self.commit, "date": self.date}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> NightRef:
        return cls(int(data["index"]), str(data["commit"]), str(data["date"]))

    @classmethod
    def of(cls, nights: Sequence[Night], index: int) -> NightRef:
        return cls(index, nights[index].commit, nights[index].date)


@dataclass(frozen=True)
class Change:
    """One step change of one figure of one configuration."""

    arch: str
    benchmark: str
    fullname: str  # the pytest node id, to measure it alone
    figure: str  # a layer, or TOTAL
    last_good: NightRef
    first_bad: NightRef
    before_us: float
    after_us: float
    low: float | None  # the size's 95 % confidence interval (fractions), None with one night a side
    high: float | None
    p_value: float
    coincides: tuple[str, ...] = ()  # what else changed between the two nights

    @property
    def size(self) -> float:
        """The relative change (+0.03: 3 % slower)."""
        return self.after_us / self.before_us - 1.0 if self.before_us else math.inf

    @property
    def slower(self) -> bool:
        return self.after_us > self.before_us

    @property
    def runner(self) -> bool:
        """The change is the runner's (host, its software, or no commit between the nights)."""
        return any(c.startswith(RUNNER_PREFIXES) for c in self.coincides)

    @property
    def key(self) -> str:
        """Stable across nights: the issue of this change is found by it."""
        return f"{self.arch}/{self.benchmark}/{self.figure}@{self.first_bad.commit[:12]}"

    def size_text(self) -> str:
        ci = (
            "" if self.low is None or self.high is None else f" (95 % CI {self.low:+.1%} to {self.high:+.1%})"
        )
        return f"{self.size:+.1%}{ci}"

    def describe(self) -> str:
        what = "the total" if self.figure == TOTAL else f"layer {self.figure}"
        line = (
            f"{self.benchmark} ({self.arch}), {what}: {duration(self.before_us)} -> "
            f"{duration(self.after_us)}, {self.size_text()}, p = {self.p_value:.2g}; last good night "
            f"{self.last_good.date[:10]} {self.last_good.commit[:12]}, first bad "
            f"{self.first_bad.date[:10]} {self.first_bad.commit[:12]}"
        )
        if self.runner:
            return f"{line}; coincides with {'; '.join(self.coincides)}: the runner's, not the code's"
        return line + (f"; also changed: {'; '.join(self.coincides)}" if self.coincides else "")

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "arch": self.arch,
            "benchmark": self.benchmark,
            "fullname": self.fullname,
            "figure": self.figure,
            "last_good": self.last_good.to_json(),
            "first_bad": self.first_bad.to_json(),
            "before_us": self.before_us,
            "after_us": self.after_us,
            "size": round(self.size, 5),
            "low": None if self.low is None else round(self.low, 5),
            "high": None if self.high is None else round(self.high, 5),
            "p_value": self.p_value,
            "coincides": list(self.coincides),
            "runner": self.runner,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Change:
        def maybe(key: str) -> float | None:
            return None if data.get(key) is None else float(data[key])

        return cls(
            str(data["arch"]),
            str(data["benchmark"]),
            str(data["fullname"]),
            str(data["figure"]),
            NightRef.from_json(data["last_good"]),
            NightRef.from_json(data["first_bad"]),
            float(data["before_us"]),
            float(data["after_us"]),
            maybe("low"),
            maybe("high"),
            float(data["p_value"]),
            tuple(str(c) for c in data.get("coincides", ())),
        )


HOST = "a host change"
RUNNER_SOFTWARE = "a runner software change"
NO_COMMIT = "no commit between the two nights"
RUNNER_PREFIXES = (HOST, RUNNER_SOFTWARE, NO_COMMIT)


def coincides(before: Night, after: Night) -> tuple[str, ...]:
    """What changed between two nights besides the code: ``a host change 5c1fae1c -> 9e01a2b3
    (driver 580.159.04 -> 590.48.01)``, ``a runner software change (torch 2.11.0 -> 2.12.0)``,
    ``packages: ultralytics 8.4.1 -> 8.4.2``, ``no commit between the two nights``."""
    out = []
    soft = sorted(set(before.software) | set(after.software))
    moved = [(k, before.software.get(k, "?"), after.software.get(k, "?")) for k in soft]
    moved = [m for m in moved if m[1] != m[2]]
    runner = [f"{k} {a} -> {b}" for k, a, b in moved if k in SOFTWARE_OF_RUNNER]
    others = [f"{k} {a} -> {b}" for k, a, b in moved if k not in SOFTWARE_OF_RUNNER]
    if before.host_id != after.host_id:
        host = f"{HOST} {before.host_id or 'unknown'} -> {after.host_id or 'unknown'}"
        if before.host is not None and after.host is not None:
            host += f" ({before.host.short()} -> {after.host.short()})"
        out.append(host + (f" ({', '.join(runner)})" if runner else ""))
    elif runner:
        out.append(f"{RUNNER_SOFTWARE} ({', '.join(runner)})")
    if others:
        out.append(f"packages: {', '.join(others)}")
    if before.commit == after.commit:
        out.append(NO_COMMIT)
    return tuple(out)


@dataclass(frozen=True)
class Point:
    """A change point as the detector gives it: where the second segment starts, and its p-value."""

    index: int
    p_value: float


Detector = Callable[[Sequence[float], float, float, int], list[Point]]


def otava_points(
    series: Sequence[float], min_magnitude: float, max_pvalue: float, window: int
) -> list[Point]:
    """Apache Otava's change points of ``series`` (E-Divisive means, then its merge step)."""
    try:
        from otava.analysis import compute_change_points
    except ImportError as exc:
        raise DetectorMissing(
            f"kernelgate changes needs Apache Otava, which is not installed ({exc}): {INSTALL}"
        ) from exc
    found, _ = compute_change_points(
        list(series), window_len=window, max_pvalue=max_pvalue, min_magnitude=min_magnitude
    )
    return [Point(int(cp.index), float(cp.stats.pvalue)) for cp in found]


def _interval(left: Sequence[float], right: Sequence[float]) -> tuple[float | None, float | None]:
    """The 95 % confidence interval of mean(right) / mean(left) - 1 (Welch's t on the difference)."""
    from scipy import stats

    if len(left) < 2 or len(right) < 2:
        return None, None
    m1, m2 = statistics.fmean(left), statistics.fmean(right)
    v1, v2 = statistics.variance(left) / len(left), statistics.variance(right) / len(right)
    se = math.sqrt(v1 + v2)
    if se == 0.0 or m1 == 0.0:
        return (m2 / m1 - 1.0, m2 / m1 - 1.0) if m1 else (None, None)
    df = (v1 + v2) ** 2 / (v1**2 / (len(left) - 1) + v2**2 / (len(right) - 1))
    half = float(stats.t.ppf(0.975, df)) * se
    return (m2 - m1 - half) / m1, (m2 - m1 + half) / m1


def series_of(nights: Sequence[Night], benchmark: str, figure: str) -> tuple[list[int], list[float]]:
    """The nights that measured ``figure`` of ``benchmark`` (their indexes) and its medians."""
    at, values = [], []
    for i, night in enumerate(nights):
        config = night.configs.get(benchmark)
        found = config.figure(figure) if config is not None else None
        if found is not None:
            at.append(i)
            values.append(found.median)
    return at, values


def figures(nights: Sequence[Night]) -> list[tuple[str, str, str]]:
    """Every (benchmark, figure, fullname) of the history: the total and each layer."""
    seen: dict[tuple[str, str], str] = {}
    for night in nights:
        for name, config in night.configs.items():
            for figure in (TOTAL, *config.layers):
                seen[(name, figure)] = config.fullname
    return [(b, f, full) for (b, f), full in sorted(seen.items())]


def find(
    nights: Sequence[Night],
    gate: GateConfig,
    *,
    max_pvalue: float = DEFAULT_PVALUE,
    window: int = DEFAULT_WINDOW,
    detector: Detector = otava_points,
) -> list[Change]:
    """Every step change of every figure in ``nights`` (one architecture, oldest first) larger than
    the gate's threshold of that figure and significant at ``max_pvalue``."""
    changes = []
    for benchmark, figure, fullname in figures(nights):
        at, values = series_of(nights, benchmark, figure)
        if len(values) < MIN_NIGHTS:
            continue
        arch = nights[at[-1]].arch
        scope = Scope.TOTAL if figure == TOTAL else Scope.LAYER
        limit = gate.threshold(arch, benchmark, scope, figure)
        points = sorted(detector(values, limit.rel, max_pvalue, window), key=lambda p: p.index)
        cuts = [0, *(p.index for p in points), len(values)]
        for j, point in enumerate(points):
            left, right = values[cuts[j] : cuts[j + 1]], values[cuts[j + 1] : cuts[j + 2]]
            before, after = statistics.fmean(left), statistics.fmean(right)
            if abs(after - before) <= limit.limit_us(before):
                continue
            low, high = _interval(left, right)
            good, bad = at[point.index - 1], at[point.index]
            changes.append(
                Change(
                    arch, benchmark, fullname, figure, NightRef.of(nights, good), NightRef.of(nights, bad),
                    before, after, low, high, point.p_value, coincides(nights[good], nights[bad]),
                )
            )  # fmt: skip
    return sorted(changes, key=lambda c: (c.first_bad.index, -abs(c.size)))


@dataclass(frozen=True)
class Range:
    """The changes that appeared between one pair of nights, bisected once (on the largest)."""

    good: str
    bad: str
    changes: tuple[Change, ...]

    @property
    def target(self) -> Change:
        """The change a bisection measures: the largest slowdown, a layer before the total."""
        return max(self.changes, key=lambda c: (c.figure != TOTAL, c.size))


def to_bisect(changes: Sequence[Change]) -> list[Range]:
    """The commit ranges to bisect: slowdowns of the code (not the runner's), one range each."""
    grouped: dict[tuple[str, str], list[Change]] = {}
    for change in changes:
        if change.slower and not change.runner:
            grouped.setdefault((change.last_good.commit, change.first_bad.commit), []).append(change)
    return [Range(good, bad, tuple(found)) for (good, bad), found in grouped.items()]
