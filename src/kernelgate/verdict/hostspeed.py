"""The screen's view of the host side on a runner that is not the baseline's host (verdict stage).

Host times follow the runner's CPU: on H200 hosts other than the baseline's, the same code's CPU-side
preprocessing and ``import torch`` move by several to tens of % (docs/measurements.md, "Figures
behind the code's rules"). Against a baseline of another
host, the host side of every layer would look slower (or faster) by the runner's speed. So the
screen, which only decides what the same-host judge measures, compares the host side relative to
this runner: the baseline's host times and latency scaled by the runner's factor, the median ratio
of the layers' host times (current / baseline). A layer whose host time moved against the others (a
``time.sleep``, a new Python path) stands out; what moved all layers alike is this runner's speed.

What this cannot see across hosts: a change that slows the host side of every layer alike. The
latency of the whole step on this runner against the baseline's (the factor itself) is shown beside
the verdict, and the judge compares base and head on this runner when anything else is suspected.

The same holds between the processes of one runner (:func:`per_process`): a process's factor against the
base side's pooled host times can range from about 0.6 to 2 on one host, both sides alike, enough to fail an
A/A run on layers' host times; each process's factor taken out, such runs pass (docs/sensitivity.md,
"Injections and A/A on two more H100 hosts"). The latency is left as measured: a change that slows every
layer alike shows there, judged with the runner's two speeds in view (:mod:`kernelgate.verdict.bimodal`);
where each process's speed explains a latency that moved, it is a doubt, not a regression
(:func:`latency_in_doubt`).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import replace

from kernelgate.config import HOST_COUPLED, Scope
from kernelgate.measure.results import Dist, LayerStat, Measurement
from kernelgate.verdict.delta import SETTLED, Comparison, Delta, Verdict

MIN_LAYERS = 3  # fewer layers with a host time than this: no factor (a CUDA-graph replay has none)
MIN_HOST_US = 5.0  # layers shorter than this on the baseline's host do not vote


def factor(base: Measurement, current: Measurement) -> float | None:
    """This runner's host speed against the baseline's host (> 1: slower), or None."""
    before = {lay.name: lay.time.median for lay in base.host_layers}
    ratios = [
        lay.time.median / before[lay.name]
        for lay in current.host_layers
        if lay.name not in HOST_COUPLED and before.get(lay.name, 0.0) >= MIN_HOST_US
    ]
    return statistics.median(ratios) if len(ratios) >= MIN_LAYERS else None


def unscreened(base: Measurement, current: Measurement) -> bool:
    """True where this run timed the host side of its layers and the baseline has none (recorded
    before kernelgate timed it): neither the host times nor the waits for the device
    (:func:`kernelgate.verdict.structure.changes`) can be screened against that baseline."""
    return bool(current.host_layers) and not base.host_layers


def _scaled(dist: Dist, by: float) -> Dist:
    return Dist(tuple(v * by for v in dist.samples), dist.rounds)


def scaled(base: Measurement, by: float | None) -> Measurement:
    """``base`` with its host side (layers' host times and the latency) as this runner would have it;
    without a factor (a CUDA-graph replay, a baseline without host times), without a host side: it
    cannot be screened against another host's numbers."""
    if by is None:
        return replace(base, host_layers=(), wall=Dist(()))
    host = tuple(LayerStat(lay.name, lay.type, _scaled(lay.time, by)) for lay in base.host_layers)
    return replace(base, host_layers=host, wall=_scaled(base.wall, by))


def relative(
    shown: Comparison, screened: Comparison, by: float | None, at_fraction: Comparison | None = None
) -> Comparison:
    """``shown`` (against the baseline as recorded) with each host-side failure that the comparison
    relative to this runner (``screened``) does not fail marked unchanged, with the runner's factor;
    and each host-side figure left inside the noise (ambiguous) that the screen relative to this
    runner at its fraction of the thresholds (``at_fraction``) settles, unchanged or faster: a pass
    then says this runner's speed explains it, not "not settled" (the screen's doubts,
    plugin/screen.open_doubts, are the ambiguous figures it does not settle)."""
    fine = {(d.scope, d.name) for d in screened.deltas if d.verdict not in screened.fail_on}
    calm = at_fraction.deltas if at_fraction is not None and by is not None else ()
    settled = {(d.scope, d.name) for d in calm if d.verdict in SETTLED}
    deltas = []
    for d in shown.deltas:
        key = (d.scope, d.name)
        failed_here = d.verdict in shown.fail_on and (key in fine or by is None)
        explained = d.verdict is Verdict.AMBIGUOUS and key in settled
        if d.scope in (Scope.HOST, Scope.WALL) and (failed_here or explained):
            d = replace(d, verdict=Verdict.UNCHANGED, note=note(by))
        deltas.append(d)
    return replace(shown, deltas=tuple(deltas))


def note(by: float | None) -> str:
    if by is None:
        return (
            "not screened against another host's numbers: too few layers timed on the host to tell this "
            "runner's speed (the same-host judge measures it when anything else is suspected)"
        )
    return (
        f"this runner's host side is {by:.2f}x the baseline host's (the layers' median); relative to "
        "that it did not move"
    )


def per_process(
    base: Measurement, head: Measurement
) -> tuple[Measurement, Measurement, tuple[tuple[float, ...], tuple[float, ...]]]:
    """Both sides of a same-host A/B (each its processes combined, one round a process: the judge's,
    ``kernelgate ab``'s) with each process's host speed taken out of its layers' host times (not the
    latency): the median over its layers of its host time against the base side pooled, as
    :func:`factor` does across hosts; each round's host times divided by it. The host-coupled stages
    (the ``input`` copy, CPU pre/post-processing) stay as measured: their time is not all the
    process's own work (a copy waits for the device) and the runner's two speeds judge them
    (:mod:`kernelgate.verdict.bimodal`). Returns both sides so, and the factors (base, head, one a
    process). A side without a factor (a CUDA-graph replay: no host times; too few layers) is left as
    it is."""
    reference = {lay.name: lay.time.median for lay in base.host_layers}

    def side(m: Measurement) -> tuple[Measurement, tuple[float, ...]]:
        voters = [
            (lay.name, lay.time.round_medians)
            for lay in m.host_layers
            if lay.name not in HOST_COUPLED and reference.get(lay.name, 0.0) >= MIN_HOST_US
        ]
        processes = {len(lay.time.round_samples()) for lay in m.host_layers}
        if len(voters) < MIN_LAYERS or len(processes) != 1:
            return m, ()  # too few layers to tell a speed, or rounds that do not line up
        factors = []
        for r in range(processes.pop()):
            ratios = [each[r] / reference[name] for name, each in voters if each[r] > 0]
            factors.append(statistics.median(ratios) if len(ratios) >= MIN_LAYERS else 1.0)
        host = tuple(
            lay if lay.name in HOST_COUPLED else LayerStat(lay.name, lay.type, _per_round(lay.time, factors))
            for lay in m.host_layers
        )
        return replace(m, host_layers=host), tuple(factors)

    b, fb = side(base)
    h, fh = side(head)
    return b, h, (fb, fh)


def _per_round(dist: Dist, factors: Sequence[float]) -> Dist:
    samples = [v / by for part, by in zip(dist.round_samples(), factors, strict=True) for v in part]
    return Dist(tuple(samples), dist.rounds)


def speeds_note(
    named: Sequence[Delta],
    speeds: tuple[Sequence[float], Sequence[float]],
    walls: tuple[Sequence[float], Sequence[float]] = ((), ()),
) -> str:
    """What a verdict naming ``named`` says of each process's host speed (:func:`per_process`; base,
    head), or '' where it has none: where a layer's host time is named, that its host times were
    taken at each process's speed; else, where the latency is named and each process's latency is
    given (``walls``), the latency at each process's speed, each process's median divided by its
    factor: for a reader, not a verdict. The latency is judged as measured, since a change that slows
    every layer's host side alike moves the factors too; where the latency at each process's speed
    agrees, the runner's speed and such a change cannot be told apart on this runner (docs/sensitivity.md,
    "Each process's host speed on the GPU")."""
    fb, fh = speeds
    if not fb or not fh:
        return ""
    if any(d.scope is Scope.HOST for d in named):
        return f" (host times at each process's speed: {_ranges(speeds)} x the base's pooled)"
    at_speed = _latency_at_speed(speeds, walls)
    if not any(d.scope is Scope.WALL for d in named) or at_speed is None:
        return ""
    base, head = at_speed
    return (
        f" (each process's host speed, its layers' host times against the base's pooled: {_ranges(speeds)}; "
        f"the latency at each process's speed {100.0 * (head / base - 1.0):+.1f} %: this runner's speed "
        "moved between processes, or the change slows every layer's host side alike, which this runner "
        "cannot tell apart)"
    )


def latency_in_doubt(
    ab: Comparison,
    speeds: tuple[Sequence[float], Sequence[float]],
    walls: tuple[Sequence[float], Sequence[float]],
) -> Comparison:
    """``ab`` with a latency it calls REGRESSED made AMBIGUOUS (a doubt: more rounds, then inconclusive,
    never a pass) where each process's host speed explains it: the base, too, ran a process at least
    as slow on the host side as the head's typical one (``speeds``: its slowest factor reaches the
    head's median), and the latency at each process's speed (each process's median in ``walls``
    divided by its factor) moved less than the latency's limit.

    The latency stays judged as measured, so this never passes it: a change that slows every layer's
    host side alike moves the head's factors too and cannot be told from the runner's speed where the
    base ran as slow; where the base's factors stay under the head's (such a change on a steady
    runner), it stays a regression. An A/A run whose head processes all ran on slow CPUs failed a latency
    that each process's speed explains (docs/sensitivity.md, "A false latency regression, the
    cross-host table")."""
    fb, fh = speeds
    at_speed = _latency_at_speed(speeds, walls)
    if at_speed is None or max(fb) < statistics.median(fh):
        return ab
    base, head = at_speed

    def doubted(d: Delta) -> Delta:
        if d.scope is not Scope.WALL or d.verdict is not Verdict.REGRESSED:
            return d
        if head - base > d.threshold.limit_us(base):
            return d  # slower than the runner's speed explains
        note = (
            f"the base ran as slow on the host side (each process's factor: {_ranges(speeds)}) and the "
            f"latency at each process's speed moved {100.0 * (head / base - 1.0):+.1f} %"
        )
        return replace(d, verdict=Verdict.AMBIGUOUS, note=note)

    return replace(ab, deltas=tuple(doubted(d) for d in ab.deltas))


def _ranges(speeds: tuple[Sequence[float], Sequence[float]]) -> str:
    """``base 0.80 … 1.63, head 1.46 … 1.56``: each side's process factors, as the notes give them."""
    fb, fh = speeds
    return f"base {min(fb):.2f} … {max(fb):.2f}, head {min(fh):.2f} … {max(fh):.2f}"


def _latency_at_speed(
    speeds: tuple[Sequence[float], Sequence[float]], walls: tuple[Sequence[float], Sequence[float]]
) -> tuple[float, float] | None:
    """The latency at each process's speed, base and head: the median over a side's processes of its
    latency divided by its factor; None without a factor and a latency for every process."""
    (fb, fh), (wb, wh) = speeds, walls
    if not fb or not fh or len(wb) != len(fb) or len(wh) != len(fh):
        return None
    base = statistics.median(w / f for w, f in zip(wb, fb, strict=True))
    head = statistics.median(w / f for w, f in zip(wh, fh, strict=True))
    return base, head
