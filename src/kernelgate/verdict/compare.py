"""Compare a measurement with its baseline: one verdict per total, layer and kernel.

A change is a regression only when all of these hold (:func:`noise_aware_rule`):

1. the median moved by more than the relative threshold,
2. and by more than the absolute floor (µs),
3. the samples differ significantly (two-sided Mann-Whitney U, ``p < alpha``, scipy.stats),
4. and the move is larger than the spread of the round medians (separate processes) of the
   baseline and of the current measurement: what process-to-process noise alone explains. The
   spread is that of the majority of rounds (:func:`kernelgate.baseline.rounds.majority_spread`): one
   outlier round must not become the noise that mutes the verdict. A baseline whose rounds disagree
   beyond ``round_tolerance`` is no yardstick at all (:mod:`kernelgate.verdict.yardstick`).

Over threshold and floor but failing 3 or 4 is AMBIGUOUS: reported, never failed. A layer whose
kernel set changed (e.g. cuDNN picked another algorithm) and whose time did not clearly move is
KERNEL_SWAPPED.
Rules sit behind :class:`Judge`; :func:`median_rule` (1 and 2 only) is kept for comparison.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from kernelgate.baseline.rounds import majority_spread
from kernelgate.config import GateConfig, Policy, Scope, Threshold
from kernelgate.measure.results import Dist, Measurement
from kernelgate.verdict import origin, structure

DEFAULT_ALPHA = 0.01
MIN_SAMPLES_FOR_TEST = 3


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

    @property
    def delta_us(self) -> float:
        return (self.current_us or 0.0) - (self.baseline_us or 0.0)

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
        """What fails, the origin layers first (in their order), the rest in execution order."""
        failing = [d for d in self.deltas if d.verdict in self.fail_on]
        first = [d for name in self.origins for d in failing if d.scope is Scope.LAYER and d.name == name]
        return (*first, *(d for d in failing if d not in first))

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


def _pair(
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


def _matched(
    scope: Scope,
    base: dict[str, Item],
    cur: dict[str, Item],
    limit: Callable[[Scope, str], Threshold],
    judge: Judge,
) -> list[Delta]:
    names = list(cur) + [n for n in base if n not in cur]
    return [_pair(scope, n, base.get(n), cur.get(n), limit(scope, n), judge) for n in names]


def _mark_swaps(layers: list[Delta], kernels: list[Delta]) -> list[Delta]:
    swapped = {k.layer for k in kernels if k.verdict in (Verdict.NEW, Verdict.MISSING)}
    out = []
    for delta in layers:
        if delta.name in swapped and delta.verdict in (Verdict.UNCHANGED, Verdict.AMBIGUOUS):
            ins = sum(1 for k in kernels if k.layer == delta.name and k.verdict is Verdict.NEW)
            outs = sum(1 for k in kernels if k.layer == delta.name and k.verdict is Verdict.MISSING)
            delta = replace(delta, verdict=Verdict.KERNEL_SWAPPED, note=f"{ins} kernel(s) in, {outs} out")
        out.append(delta)
    return out


def compare(
    baseline: Measurement,
    current: Measurement,
    config: GateConfig,
    judge: Judge | None = None,
) -> Comparison:
    def limit(scope: Scope, name: str) -> Threshold:
        return config.threshold(current.arch, current.benchmark, scope, name)

    def rule(b: Dist, c: Dist, t: Threshold) -> Judgement:
        return noise_aware_rule(b, c, t, alpha=config.alpha)

    chosen: Judge = judge or rule
    total = _pair(
        Scope.TOTAL,
        "total",
        ("", baseline.total, None),
        ("", current.total, None),
        limit(Scope.TOTAL, "total"),
        chosen,
    )
    layers = _matched(
        Scope.LAYER,
        {lay.name: (lay.name, lay.time, None) for lay in baseline.layers},
        {lay.name: (lay.name, lay.time, None) for lay in current.layers},
        limit,
        chosen,
    )
    kernels = _matched(
        Scope.KERNEL,
        {k.key: (k.layer, k.time, k.calls) for k in baseline.kernels},
        {k.key: (k.layer, k.time, k.calls) for k in current.kernels},
        limit,
        chosen,
    )
    notes = []
    if current.throttled:
        notes.append("the GPU reported a clock slowdown (power or thermal) while this was measured")
    layers, origins = _attribute(_mark_swaps(layers, kernels), baseline, current, config.alpha)
    deltas = (total, *layers, *kernels)
    return Comparison(current.benchmark, current.arch, deltas, fail_set(config), tuple(notes), origins)


def _attribute(
    layers: list[Delta], baseline: Measurement, current: Measurement, alpha: float
) -> tuple[list[Delta], tuple[str, ...]]:
    """The layers with the origin of a regression named (:mod:`kernelgate.verdict.origin`). A layer
    whose kernel set changed counts as an origin when it regressed or, under its relative threshold
    but over its floor, when its own samples moved up significantly (Mann-Whitney ``p < alpha``);
    then it fails too: the configuration fails on the layers it shifted anyway, and the report must
    lead with it."""
    if not any(d.verdict is Verdict.REGRESSED for d in layers):
        return layers, ()
    base = {lay.name: lay.time for lay in baseline.layers}
    cur = {lay.name: lay.time for lay in current.layers}
    p_values: dict[str, float] = {}
    structural = {}
    for name, what in structure.by_layer(structure.changes(baseline, current)).items():
        d = next((d for d in layers if d.name == name), None)
        # under its relative threshold, never under its floor: changes under the floor never fail
        if d is None or name not in base or name not in cur or d.delta_us <= d.threshold.floor_us:
            continue
        p = d.p_value if d.verdict is Verdict.REGRESSED else mann_whitney_p(base[name], cur[name])
        if d.verdict is Verdict.REGRESSED or (p is not None and p < alpha):
            structural[name] = what
            if p is not None:
                p_values[name] = p
    moves = [
        origin.Move(d.name, d.delta_us, d.verdict is Verdict.REGRESSED)
        for d in layers
        if d.baseline_us is not None and d.current_us is not None
    ]
    found = origin.find(moves, structural)
    if found is None:
        return layers, ()
    out = []
    for d in layers:
        if d.name in found.layers and d.verdict is not Verdict.REGRESSED:
            d = replace(d, verdict=Verdict.REGRESSED, p_value=p_values.get(d.name))
        note = found.note(d.name)
        out.append(replace(d, note=note) if note else d)
    return out, found.layers


def confirmed(first: Comparison, again: Comparison) -> Comparison:
    """``first`` with each failure kept only where the re-measurement ``again`` fails it too.

    A failure that does not recur is downgraded to AMBIGUOUS: a flake must not fail CI.
    """
    repeat = {(d.scope, d.name): d for d in again.deltas}
    deltas = []
    for delta in first.deltas:
        if delta.verdict in first.fail_on:
            other = repeat.get((delta.scope, delta.name))
            again_us = other.current_us if other else None
            if other is not None and other.verdict is delta.verdict:
                delta = replace(delta, confirm_us=again_us)
            else:
                shown = "absent" if again_us is None else f"{again_us:.1f} µs"
                delta = replace(
                    delta,
                    verdict=Verdict.AMBIGUOUS,
                    confirm_us=again_us,
                    note=f"not confirmed (re-run: {shown})",
                )
        deltas.append(delta)
    return replace(first, deltas=tuple(deltas), notes=first.notes + again.notes)
