"""Compare a measurement with its baseline: one verdict per total, layer and kernel.

The rule here is deliberately simple: a change counts when the median moved by more than the
threshold AND by more than the absolute floor. It sits behind :class:`Judge`, so a statistical
rule can replace it without touching callers or reports.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from kernelgate.config import GateConfig, Scope, Threshold
from kernelgate.measure import Dist, Measurement


class Verdict(enum.Enum):
    REGRESSED = "regressed"
    IMPROVED = "improved"
    UNCHANGED = "unchanged"
    NEW = "new"
    MISSING = "missing"


class Judge(Protocol):
    def __call__(self, baseline: Dist, current: Dist, threshold: Threshold) -> Verdict: ...


def median_rule(baseline: Dist, current: Dist, threshold: Threshold) -> Verdict:
    delta = current.median - baseline.median
    limit = threshold.limit_us(baseline.median)
    if delta > limit:
        return Verdict.REGRESSED
    if -delta > limit:
        return Verdict.IMPROVED
    return Verdict.UNCHANGED


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

    @property
    def delta_us(self) -> float:
        return (self.current_us or 0.0) - (self.baseline_us or 0.0)

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

    def of(self, scope: Scope, *verdicts: Verdict) -> tuple[Delta, ...]:
        return tuple(d for d in self.deltas if d.scope is scope and (not verdicts or d.verdict in verdicts))

    def kernels_of(self, layer: str) -> tuple[Delta, ...]:
        changed = [d for d in self.of(Scope.KERNEL) if d.layer == layer]
        return tuple(sorted(changed, key=lambda d: -abs(d.delta_us)))

    @property
    def failures(self) -> tuple[Delta, ...]:
        return tuple(d for d in self.deltas if d.verdict in self.fail_on)

    @property
    def failed(self) -> bool:
        return bool(self.failures)


def fail_set(config: GateConfig) -> frozenset[Verdict]:
    verdicts = {Verdict.REGRESSED}
    if config.fail_on_new:
        verdicts.add(Verdict.NEW)
    if config.fail_on_missing:
        verdicts.add(Verdict.MISSING)
    return frozenset(verdicts)


def _pair(
    scope: Scope,
    name: str,
    layer: str,
    base: Dist | None,
    cur: Dist | None,
    threshold: Threshold,
    judge: Judge,
    calls: tuple[float | None, float | None] = (None, None),
) -> Delta:
    if base is None:
        verdict = Verdict.NEW
    elif cur is None:
        verdict = Verdict.MISSING
    else:
        verdict = judge(base, cur, threshold)
    return Delta(
        scope=scope,
        name=name,
        layer=layer,
        baseline_us=base.median if base is not None else None,
        current_us=cur.median if cur is not None else None,
        threshold=threshold,
        verdict=verdict,
        baseline_calls=calls[0],
        current_calls=calls[1],
    )


def compare(
    baseline: Measurement,
    current: Measurement,
    config: GateConfig,
    judge: Judge = median_rule,
) -> Comparison:
    def limit(scope: Scope, name: str) -> Threshold:
        return config.threshold(current.arch, current.benchmark, scope, name)

    deltas = [
        _pair(Scope.TOTAL, "total", "", baseline.total, current.total, limit(Scope.TOTAL, "total"), judge)
    ]
    deltas += _matched(
        Scope.LAYER,
        {lay.name: (lay.name, lay.time, None) for lay in baseline.layers},
        {lay.name: (lay.name, lay.time, None) for lay in current.layers},
        limit,
        judge,
    )
    deltas += _matched(
        Scope.KERNEL,
        {k.key: (k.layer, k.time, k.calls) for k in baseline.kernels},
        {k.key: (k.layer, k.time, k.calls) for k in current.kernels},
        limit,
        judge,
    )
    return Comparison(current.benchmark, current.arch, tuple(deltas), fail_set(config))


def _matched(
    scope: Scope,
    base: dict[str, tuple[str, Dist, float | None]],
    cur: dict[str, tuple[str, Dist, float | None]],
    limit: Callable[[Scope, str], Threshold],
    judge: Judge,
) -> list[Delta]:
    names = list(cur) + [n for n in base if n not in cur]
    out = []
    for name in names:
        layer = (cur.get(name) or base[name])[0]
        b = base.get(name)
        c = cur.get(name)
        calls = (b[2] if b else None, c[2] if c else None)
        out.append(
            _pair(
                scope, name, layer, b[1] if b else None, c[1] if c else None, limit(scope, name), judge, calls
            )
        )
    return out
