"""The vocabulary of a comparison: a :class:`Verdict` per figure, the :class:`Delta` of one figure
(total, layer, kernel, host time, latency, cold-start phase) between a baseline and a measurement, the
:class:`Comparison` of one benchmark, and the rules that judge one pair of distributions
(:func:`noise_aware_rule`, :func:`median_rule`). :mod:`kernelgate.verdict.compare` pairs the figures."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kernelgate.baseline.rounds import majority_spread
from kernelgate.config import GateConfig, Policy, Scope, Threshold
from kernelgate.measure.results import Dist, LayerStat

DEFAULT_ALPHA = 0.01
MIN_SAMPLES_FOR_TEST = 3
MIN_PROCESSES = 3  # a side, for the process test (:func:`process_p`): confirm_min_rounds' default


class Verdict(enum.Enum):
    REGRESSED = "regressed"
    IMPROVED = "improved"
    UNCHANGED = "unchanged"
    AMBIGUOUS = "ambiguous"
    # the same-host judge could not settle a suspect (kernelgate.verdict.samehost); fails unless
    # on_inconclusive = "warn"
    INCONCLUSIVE = "inconclusive"
    KERNEL_SWAPPED = "kernel swapped"
    NEW = "new"
    MISSING = "missing"


# a figure no slower past its limit: what settles a doubt of a regression
SETTLED = frozenset({Verdict.UNCHANGED, Verdict.IMPROVED})


class Basis(enum.Enum):
    """What a figure's verdict was taken on (:mod:`kernelgate.verdict.probespeed`,
    :func:`kernelgate.verdict.ownrange.at_own_level`)."""

    MEASURED = "measured"
    # over its limit only once divided by each step's CPU-speed loop: judged as measured instead
    ONLY_AT_SPEED = "only at each step's CPU speed"
    # over its limit as measured, within it at each step's CPU speed against the runner's own rounds:
    # the screen passed it
    EXPLAINED = "explained by each step's CPU speed"
    # a device-side layer over its threshold against the pooled median of the runner's own rounds,
    # inside the levels of those rounds: the screen passed it (kernelgate.verdict.ownrange.at_own_level)
    OWN_LEVEL = "at the level of this runner's own rounds"


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    p_value: float | None = None
    noise_pct: float | None = None


Judge = Callable[[Dist, Dist, Threshold], Judgement]


def median_rule(baseline: Dist, current: Dist, threshold: Threshold) -> Judgement:
    """Threshold and floor on the medians only: no significance, no noise model."""
    delta = current.median - baseline.median
    limit = threshold.limit_us(baseline.median)
    if delta > limit:
        return Judgement(Verdict.REGRESSED)
    if -delta > limit:
        return Judgement(Verdict.IMPROVED)
    return Judgement(Verdict.UNCHANGED)


def round_spread(dist: Dist, center: float) -> float:
    """The distance of the round medians from ``center`` that the majority of rounds stays within,
    in µs (0 for a single round; with two rounds, the larger distance)."""
    return majority_spread(dist, center)


def mann_whitney_p(baseline: Dist, current: Dist) -> float | None:
    """Two-sided Mann-Whitney U p-value, or None when either side has too few samples."""
    if min(baseline.n, current.n) < MIN_SAMPLES_FOR_TEST:
        return None
    if len(set(baseline.samples) | set(current.samples)) == 1:
        return 1.0
    from scipy.stats import mannwhitneyu

    return float(mannwhitneyu(baseline.samples, current.samples, alternative="two-sided").pvalue)


def noise_aware_rule(
    baseline: Dist, current: Dist, threshold: Threshold, alpha: float = DEFAULT_ALPHA
) -> Judgement:
    base, cur = baseline.median, current.median
    delta = cur - base
    if abs(delta) <= threshold.limit_us(base):
        return Judgement(Verdict.UNCHANGED)
    p_value = mann_whitney_p(baseline, current)
    noise = max(round_spread(baseline, base), round_spread(current, cur))
    noise_pct = 100.0 * noise / base if base else None
    significant = p_value is None or p_value < alpha
    if not significant or abs(delta) <= noise:
        return Judgement(Verdict.AMBIGUOUS, p_value, noise_pct)
    return Judgement(Verdict.REGRESSED if delta > 0 else Verdict.IMPROVED, p_value, noise_pct)


def process_p(baseline: Dist, current: Dist) -> float | None:
    """One-sided Welch t-test (scipy.stats) on the process medians (one per round, each a fresh
    process), in the direction the medians moved; None with fewer than ``MIN_PROCESSES`` a side
    (then the pooled rule decides alone: with two processes a side the t-test has one or two
    degrees of freedom, and one broken round of a CPU run, e.g. a profile that lost its ops, mutes
    a 64-channel convolution's +99 %).

    The process is the unit of replication of a same-host A/B: the iterations of one process share
    its state (where its memory and threads landed, what the host did meanwhile), so pooled they
    overstate the evidence: one process now and then runs a configuration's eager step tens of %
    slower than the other processes of the same code, which the pooled iterations take for a
    significant regression (docs/sensitivity.md, "The fixed tree across hosts, and the process as the
    unit"). Process medians that agree (device-side layers: within 0.4 %)
    give a small p at three processes a side; an odd process makes the t-test's variance large, and
    the judge measures more rounds instead of deciding.
    """
    b, c = baseline.round_medians, current.round_medians
    if len(b) < MIN_PROCESSES or len(c) < MIN_PROCESSES:
        return None
    import statistics

    mean_b, mean_c = statistics.fmean(b), statistics.fmean(c)
    if statistics.variance(b) == 0 and statistics.variance(c) == 0:
        return 1.0 if mean_b == mean_c else 0.0
    from scipy.stats import ttest_ind

    up = current.median >= baseline.median
    found = ttest_ind(c, b, equal_var=False, alternative="greater" if up else "less")
    return float(found.pvalue)


def process_rule(
    baseline: Dist, current: Dist, threshold: Threshold, alpha: float = DEFAULT_ALPHA
) -> Judgement:
    """The rule of a same-host A/B of processes: :func:`noise_aware_rule`, and a move that the process
    medians bear out (:func:`process_p` ``< alpha``); else AMBIGUOUS (more rounds, or a doubt). The
    p-value shown is the larger of the two tests'."""
    found = noise_aware_rule(baseline, current, threshold, alpha)
    if found.verdict not in (Verdict.REGRESSED, Verdict.IMPROVED):
        return found
    p = process_p(baseline, current)
    if p is None:
        return found
    shown = max(p, found.p_value) if found.p_value is not None else p
    if not p < alpha:
        return Judgement(Verdict.AMBIGUOUS, shown, found.noise_pct)
    return Judgement(found.verdict, shown, found.noise_pct)


@dataclass(frozen=True)
class Delta:
    scope: Scope
    name: str
    layer: str
    baseline_us: float | None
    current_us: float | None
    threshold: Threshold
    verdict: Verdict
    baseline_calls: float | None = None
    current_calls: float | None = None
    p_value: float | None = None
    noise_pct: float | None = None
    confirm_us: float | None = None  # the head's median in the same-host A/B (or a confirm run)
    confirm_base_us: float | None = None  # the base's median in the same-host A/B
    note: str = ""
    basis: Basis = Basis.MEASURED

    @property
    def delta_us(self) -> float:
        return (self.current_us or 0.0) - (self.baseline_us or 0.0)

    @property
    def figure(self) -> str:
        """What the delta is about, as people read it: ``model.9``, ``host model.9``, ``wall``."""
        return f"host {self.name}" if self.scope is Scope.HOST else self.name

    def to_json(self) -> dict[str, Any]:
        """Every field, unrounded: :meth:`from_json` gives back an equal delta (a worker's verdicts
        travel to the controller this way). For the report's rounded form see :mod:`report_json`."""
        return {
            "scope": self.scope.value,
            "name": self.name,
            "layer": self.layer,
            "baseline_us": self.baseline_us,
            "current_us": self.current_us,
            "threshold": {"rel": self.threshold.rel, "floor_us": self.threshold.floor_us},
            "verdict": self.verdict.value,
            "baseline_calls": self.baseline_calls,
            "current_calls": self.current_calls,
            "p_value": self.p_value,
            "noise_pct": self.noise_pct,
            "confirm_us": self.confirm_us,
            "confirm_base_us": self.confirm_base_us,
            "note": self.note,
            "basis": self.basis.value,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Delta:
        def number(key: str) -> float | None:
            value = data.get(key)
            return None if value is None else float(value)

        return cls(
            scope=Scope(data["scope"]),
            name=str(data["name"]),
            layer=str(data["layer"]),
            baseline_us=number("baseline_us"),
            current_us=number("current_us"),
            threshold=Threshold(float(data["threshold"]["rel"]), float(data["threshold"]["floor_us"])),
            verdict=Verdict(data["verdict"]),
            baseline_calls=number("baseline_calls"),
            current_calls=number("current_calls"),
            p_value=number("p_value"),
            noise_pct=number("noise_pct"),
            confirm_us=number("confirm_us"),
            confirm_base_us=number("confirm_base_us"),
            note=str(data.get("note", "")),
            basis=Basis(data.get("basis", Basis.MEASURED.value)),
        )

    @property
    def delta_pct(self) -> float | None:
        if not self.baseline_us or self.current_us is None:
            return None
        return 100.0 * self.delta_us / self.baseline_us


@dataclass(frozen=True)
class Comparison:
    benchmark: str
    arch: str
    deltas: tuple[Delta, ...]
    fail_on: frozenset[Verdict]
    notes: tuple[str, ...] = ()
    origins: tuple[str, ...] = ()  # layers named as the origin of the regression (kernelgate.verdict.origin)

    def of(self, scope: Scope, *verdicts: Verdict) -> tuple[Delta, ...]:
        return tuple(d for d in self.deltas if d.scope is scope and (not verdicts or d.verdict in verdicts))

    def kernels_of(self, layer: str) -> tuple[Delta, ...]:
        changed = [d for d in self.of(Scope.KERNEL) if d.layer == layer]
        return tuple(sorted(changed, key=lambda d: -abs(d.delta_us)))

    @property
    def failures(self) -> tuple[Delta, ...]:
        """What fails, the origin layers first (in their order), the rest in execution order, the
        whole forward's figures (total, latency) last: a message names what got slower first."""
        failing = [d for d in self.deltas if d.verdict in self.fail_on]
        first = [d for name in self.origins for d in failing if d.scope is Scope.LAYER and d.name == name]
        rest = [d for d in failing if d not in first]
        whole = [d for d in rest if d.scope in (Scope.TOTAL, Scope.WALL)]
        return (*first, *(d for d in rest if d not in whole), *whole)

    @property
    def failed(self) -> bool:
        return bool(self.failures)

    def to_json(self) -> dict[str, Any]:
        """The whole comparison, verdicts as computed: :meth:`from_json` gives back an equal one."""
        return {
            "benchmark": self.benchmark,
            "arch": self.arch,
            "fail_on": sorted(v.value for v in self.fail_on),
            "notes": list(self.notes),
            "origins": list(self.origins),
            "deltas": [d.to_json() for d in self.deltas],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Comparison:
        return cls(
            benchmark=str(data["benchmark"]),
            arch=str(data["arch"]),
            deltas=tuple(Delta.from_json(d) for d in data["deltas"]),
            fail_on=frozenset(Verdict(v) for v in data["fail_on"]),
            notes=tuple(str(n) for n in data.get("notes", ())),
            origins=tuple(str(n) for n in data.get("origins", ())),
        )


def fail_set(config: GateConfig) -> frozenset[Verdict]:
    verdicts = {Verdict.REGRESSED}
    if config.fail_on_new:
        verdicts.add(Verdict.NEW)
    if config.fail_on_missing:
        verdicts.add(Verdict.MISSING)
    if config.on_inconclusive is Policy.FAIL:
        verdicts.add(Verdict.INCONCLUSIVE)
    return frozenset(verdicts)


Item = tuple[str, Dist, float | None]  # (layer, distribution, launches per iteration)


def pair(
    scope: Scope, name: str, base: Item | None, cur: Item | None, threshold: Threshold, judge: Judge
) -> Delta:
    if base is None:
        judgement = Judgement(Verdict.NEW)
    elif cur is None:
        judgement = Judgement(Verdict.MISSING)
    else:
        judgement = judge(base[1], cur[1], threshold)
    return Delta(
        scope=scope,
        name=name,
        layer=(cur or base or ("", Dist(()), None))[0],
        baseline_us=base[1].median if base else None,
        current_us=cur[1].median if cur else None,
        threshold=threshold,
        verdict=judgement.verdict,
        baseline_calls=base[2] if base else None,
        current_calls=cur[2] if cur else None,
        p_value=judgement.p_value,
        noise_pct=judgement.noise_pct,
    )


def by_layer(layers: Iterable[LayerStat]) -> dict[str, Item]:
    """Layers (device- or host-side) as :func:`matched` pairs them: by name, with no call count."""
    return {lay.name: (lay.name, lay.time, None) for lay in layers}


def matched(
    scope: Scope,
    base: dict[str, Item],
    cur: dict[str, Item],
    limit: Callable[[Scope, str], Threshold],
    judge: Judge,
) -> list[Delta]:
    names = list(cur) + [n for n in base if n not in cur]
    return [pair(scope, n, base.get(n), cur.get(n), limit(scope, n), judge) for n in names]
