"""The screen's rule where the baseline holds rounds this runner recorded itself: a figure is a suspect
only where this run's process lies beyond every process of its own rounds (one outlier round set aside
where there are three or more) by more than half the screen's limit (:data:`MARGIN`: a quarter of the
threshold at ``screen = 50 %``, or half the floor where the floor is the limit). Part of the verdict
stage: it decides what the screen sends to the same-host judge.

The screen measures the head in one process; the pooled median of two or three own rounds sits between
them, so a process at the level of one of the baseline's own processes could sit past half the
threshold against that median and send an unchanged configuration to the judge run after run. Such a
process is no evidence of a change (docs/sensitivity.md, "Two rounds a runner on two H200s").

:func:`noise_aware_rule` still decides first (threshold, floor, significance, round spread); this rule
only lets go a move that stays within ``MARGIN`` times the limit of the farthest own process. The plugin
sends any figure that fails at the full threshold to the judge all the same (never fails it unjudged).

What it costs in sensitivity, offline and live, is measured in docs/sensitivity.md ("Two rounds a
runner on two H200s" and "The screen against a runner's own rounds, live"): injected +3 % slowdowns
stay suspects nearly as often as against the pooled median alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from kernelgate.baseline import ownrounds
from kernelgate.config import GateConfig, Scope, Threshold
from kernelgate.measure.results import Dist, Measurement
from kernelgate.measure.stages import HOST_COUPLED
from kernelgate.verdict.compare import Comparison, compare
from kernelgate.verdict.delta import DEFAULT_ALPHA, Basis, Delta, Judge, Judgement, Verdict, noise_aware_rule

# how far beyond the farthest own process, in parts of the screen's limit: a quarter of the threshold
# at screen = 50 %
MARGIN = 0.5


def farthest(medians: Sequence[float], up: bool) -> float | None:
    """The slowest (``up``) or fastest process median of the rounds, the most extreme one set aside where
    there are three or more (one outlier round must not widen the range); None under two rounds."""
    if len(medians) < 2:
        return None
    ordered = sorted(medians, reverse=not up)
    return ordered[-2] if len(ordered) >= 3 else ordered[-1]


def rule(alpha: float = DEFAULT_ALPHA) -> Judge:
    """:func:`noise_aware_rule`, with a move within ``limit`` of the farthest own process AMBIGUOUS."""

    def judge(baseline: Dist, current: Dist, threshold: Threshold) -> Judgement:
        found = noise_aware_rule(baseline, current, threshold, alpha)
        if found.verdict not in (Verdict.REGRESSED, Verdict.IMPROVED):
            return found
        up = found.verdict is Verdict.REGRESSED
        edge = farthest(baseline.round_medians, up)
        if edge is None:
            return found
        beyond = current.median - edge if up else edge - current.median
        if beyond > MARGIN * threshold.limit_us(baseline.median):
            return found
        return Judgement(Verdict.AMBIGUOUS, found.p_value, found.noise_pct)

    return judge


def at_own_level(
    found: Comparison, screened: Comparison, stored: Measurement, run: Measurement
) -> Comparison:
    """The screen's full-threshold comparison ``found`` of this runner's process ``run`` with its own
    rounds ``stored``, with each device-side layer it fails that the screen's own comparison
    (``screened``, by :func:`rule`) let go marked unchanged, the numbers in its note
    (``Basis.OWN_LEVEL``): the process lies within :data:`MARGIN` of the screen's limit of the
    slowest own round (one outlier set aside among three or more), inside the levels its own processes
    took. Everything else ``found`` fails stays failing, and so a suspect.

    A layer's time on one GPU can sit at one of a few levels a few % apart from process to process,
    with the same kernels: the pooled median of such rounds lies between the levels, and a process at
    the slow one is over the full threshold against it although it matches an own round. Re-screened
    offline (``tools/rescreen.py``), this lets those go and keeps injected slowdowns failing as often
    (docs/sensitivity.md, "Rounds appended late, and layers at a few levels per process")."""
    if not recorded_here(stored, run):
        return found
    own = {lay.name: lay.time for lay in stored.layers}
    now = {lay.name: lay.time for lay in run.layers}
    let_go = {
        d.name: d for d in screened.deltas if d.scope is Scope.LAYER and d.verdict not in screened.fail_on
    }

    def judged(d: Delta) -> Delta:
        if d.verdict is not Verdict.REGRESSED or d.scope is not Scope.LAYER or d.name in HOST_COUPLED:
            return d
        base, current, at = own.get(d.name), now.get(d.name), let_go.get(d.name)
        edge = farthest(base.round_medians, up=True) if base is not None else None
        if at is None or current is None or edge is None or d.delta_pct is None or base is None:
            return d
        allowed = MARGIN * at.threshold.limit_us(base.median)
        if current.median - edge > allowed:
            return d
        slowest = "slowest of them" + (", one outlier set aside" if len(base.round_medians) >= 3 else "")
        said = (
            f"{d.delta_pct:+.1f} % against the pooled median of this runner's own rounds; "
            f"{current.median:.1f} µs is {current.median - edge:+.1f} µs from the {slowest} "
            f"({edge:.1f} µs), within {allowed:.1f} µs: inside the levels of its own rounds"
        )
        return replace(d, verdict=Verdict.UNCHANGED, note=f"{said}; {d.note}" if d.note else said,
                       basis=Basis.OWN_LEVEL)  # fmt: skip

    return replace(found, deltas=tuple(judged(d) for d in found.deltas))


def recorded_here(stored: Measurement, run: Measurement) -> bool:
    """Whether every round of ``stored`` was recorded by the host that measured ``run``."""
    return ownrounds.recorded_by(stored, run.round_hosts[0] if run.round_hosts else None)


def aged(stored: Measurement, run: Measurement, ab: Comparison, config: GateConfig) -> list[str]:
    """The device-side layers this run's screen sent to the judge against this runner's own rounds
    (``stored``, :func:`rule`) whose base, measured on this runner now (``ab``: the judge's base ->
    head, which passed), is as far above those rounds (past the screen's limit): the runner, or the
    base since the rounds were recorded, moved; the rounds no longer match it. Each as "model.17
    16.7 -> 17.2 µs (+2.8 %)", the largest first; none where ``stored`` is not this runner's own.

    Own rounds age: the same layers can sit a few % off a runner's rounds run after run while its A/A
    screens agree with each other and base and head agree in the judge, and every such run then goes
    to the judge; the note says when to renew the rounds (docs/sensitivity.md, "Rounds appended late,
    and layers at a few levels per process")."""
    if not recorded_here(stored, run):
        return []
    screened = compare(stored, run, config.screening(), judge=rule(config.alpha))
    now = {(d.scope, d.name): d for d in ab.deltas}
    found = []
    for d in screened.failures:
        here = now.get((d.scope, d.name))
        if d.scope is not Scope.LAYER or d.name in HOST_COUPLED or d.baseline_us is None or here is None:
            continue
        moved = (here.baseline_us or 0.0) - d.baseline_us  # the base here now, from the own rounds
        if d.verdict is Verdict.REGRESSED and moved > d.threshold.limit_us(d.baseline_us):  # screen's limit
            found.append((moved / d.baseline_us, d.name, d.baseline_us, here.baseline_us or 0.0))
    return [f"{name} {was:.1f} -> {now_us:.1f} µs ({100 * pct:+.1f} %)"
            for pct, name, was, now_us in sorted(found, reverse=True)]  # fmt: skip


SHOWN = 4  # layers named per configuration


def aged_note(found: Mapping[str, Sequence[str]], command: str) -> str:
    """What a run that passed says once where the judge passed configurations for layers whose own
    rounds no longer match this runner (:func:`aged`, by benchmark), and how to renew them; ''
    where none."""
    if not found:
        return ""
    shown = "; ".join(
        f"{name}: {', '.join(layers[:SHOWN])}"
        + (f" and {len(layers) - SHOWN} more" if len(layers) > SHOWN else "")
        for name, layers in found.items()
    )
    return (
        f"kernelgate: this runner's own rounds no longer match it ({shown}: its own rounds -> the base "
        "measured here now). A layer's time on one runner can sit at one of a few levels a few % apart, "
        "from process to process (the same kernels; seen on H200s), and the base since the "
        "rounds were recorded may have moved too. Base and head agree, so these passed; while the rounds "
        "hold none of this level, the screen sends these layers to the same-host judge (minutes a run). If "
        "the next runs say so again and the base branch is what the baseline should hold, append two "
        "rounds on this runner from the base branch (a single one would be set aside as the outlier among "
        f"three): {command}, and commit the baseline (docs/fleet.md)."
    )
