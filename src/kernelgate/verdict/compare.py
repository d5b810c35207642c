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

from dataclasses import replace

from kernelgate.config import GateConfig, Scope, Threshold
from kernelgate.measure.results import Dist, Measurement
from kernelgate.verdict import hostside, origin, structure
from kernelgate.verdict.delta import DEFAULT_ALPHA as DEFAULT_ALPHA
from kernelgate.verdict.delta import MIN_SAMPLES_FOR_TEST as MIN_SAMPLES_FOR_TEST
from kernelgate.verdict.delta import Basis as Basis
from kernelgate.verdict.delta import Comparison as Comparison
from kernelgate.verdict.delta import Delta as Delta
from kernelgate.verdict.delta import Judge as Judge
from kernelgate.verdict.delta import Judgement as Judgement
from kernelgate.verdict.delta import Verdict as Verdict
from kernelgate.verdict.delta import by_layer, matched, pair
from kernelgate.verdict.delta import fail_set as fail_set
from kernelgate.verdict.delta import mann_whitney_p as mann_whitney_p
from kernelgate.verdict.delta import median_rule as median_rule
from kernelgate.verdict.delta import noise_aware_rule as noise_aware_rule
from kernelgate.verdict.delta import round_spread as round_spread


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
    total = pair(
        Scope.TOTAL,
        "total",
        ("", baseline.total, None),
        ("", current.total, None),
        limit(Scope.TOTAL, "total"),
        chosen,
    )
    layers = matched(
        Scope.LAYER,
        by_layer(baseline.layers),
        by_layer(current.layers),
        limit,
        chosen,
    )
    kernels = matched(
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
    host = hostside.deltas(baseline, current, config, limit, chosen)
    deltas = (total, *layers, *kernels, *host)
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
