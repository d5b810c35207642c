"""The same-host judge's latency and host-coupled stages taken at the speed of the CPU each step ran
on, from a probe that does not depend on the code (verdict stage).

Each timed step is preceded by a fixed Python loop (``Measurement.cpu_probe``, about 0.3 ms, outside
the step's time): how long it took says how fast the CPU ran then, whatever the code under test. Each
sample of the latency (and of a host-coupled stage, ``cpu_probe_host``) is divided by its own step's
loop against the median loop of the base's processes, both sides alike, so the judge's usual rule
(threshold, significance, spread of the processes) decides the latency at the CPU speed of each step.
A change that slows the host side of every layer alike leaves the loop as it was, and the latency
shows it.

Why: on some runners the CPU a process runs on changes speed by up to 2x, within seconds and between
processes (:mod:`kernelgate.machine.cpuspeed`). The layers' host times carry their own yardstick
(:mod:`kernelgate.verdict.hostspeed`), but the latency and the host-coupled stages (the ``input``
copy, CPU pre/post-processing) have none, and an A/A run whose head processes all ran on slow CPUs
failed on them (docs/sensitivity.md, "Each step's CPU speed from a probe").

Only a latency sample's host part is divided: the GPU's part (the process's median GPU-busy time)
does not follow the CPU, and dividing the whole sample overcorrects where that part is large (a
CUDA-graph replay, an eager fp32 step; docs/sensitivity.md, "A CI job on each GPU of a 4-GPU H200
machine"). How closely a step follows the loop varies by configuration and load, so the loop narrows
the spread; the process test and the runner's two speeds (:mod:`kernelgate.verdict.bimodal`) still
decide. Records without probes are judged as measured (:func:`hostspeed.latency_in_doubt`).

The loop may explain a move away, never make one: a figure fails only where it is a regression at
each step's CPU speed *and* was over its limit as measured (:func:`compared`), since the loop alone
can turn a head that ran faster as measured into a regression (docs/sensitivity.md, "Rounds appended
under load and the cold starts' thread share").
"""

from __future__ import annotations

import statistics
from dataclasses import replace

from kernelgate.config import HOST_COUPLED, GateConfig, Scope, Threshold
from kernelgate.measure.results import Dist, LayerStat, Measurement
from kernelgate.verdict.compare import compare
from kernelgate.verdict.delta import (
    MIN_PROCESSES,
    SETTLED,
    Basis,
    Comparison,
    Delta,
    Judgement,
    Verdict,
    process_rule,
)
from kernelgate.verdict.processes import Key, process_medians, process_noise

Factors = tuple[tuple[float, ...], tuple[float, ...]]


def factors(base: Measurement, head: Measurement) -> Factors:
    """Each process's median probe factor on the timed steps, base and head (> 1: its CPU ran slower
    than the base's median), for the notes; ``((), ())`` where a side has too few processes or no
    probe."""
    reference = _reference(base.cpu_probe)
    pb, ph = base.cpu_probe.round_medians, head.cpu_probe.round_medians
    if reference is None or not head.cpu_probe.n or min(len(pb), len(ph)) < MIN_PROCESSES:
        return (), ()
    if not all(_lines_up(m.wall, m.cpu_probe) for m in (base, head)):
        return (), ()  # a process without a probe (an older kernelgate's): the sides as measured
    return tuple(v / reference for v in pb), tuple(v / reference for v in ph)


def _reference(probe: Dist) -> float | None:
    median = statistics.median(probe.samples) if probe.n else 0.0
    return median if median > 0 and min(probe.samples) > 0 else None


def _lines_up(dist: Dist, probe: Dist) -> bool:
    return dist.n == probe.n and (dist.rounds or (dist.n,)) == (probe.rounds or (probe.n,))


def _divided(dist: Dist, probe: Dist, reference: float) -> Dist:
    return Dist(
        tuple(v * reference / p for v, p in zip(dist.samples, probe.samples, strict=True)), dist.rounds
    )


def _host_part_divided(wall: Dist, busy: Dist, probe: Dist, reference: float) -> Dist:
    """Each latency sample's host part (the sample less its process's median GPU-busy time, ``busy``;
    none: the whole sample) divided by its step's probe against ``reference``; the GPU's part as it
    was."""
    gpu = busy.round_medians if busy.n else (0.0,) * len(wall.round_samples())
    if len(gpu) != len(wall.round_samples()):  # records that do not line up: the whole sample
        gpu = (0.0,) * len(wall.round_samples())
    out: list[float] = []
    probes = probe.round_samples()
    for g, samples, loops in zip(gpu, wall.round_samples(), probes, strict=True):
        out += [min(v, g) + max(v - g, 0.0) * reference / p for v, p in zip(samples, loops, strict=True)]
    return Dist(tuple(out), wall.rounds)


def adjust(base: Measurement, head: Measurement) -> tuple[Measurement, Measurement, Factors]:
    """Both sides at each step's CPU speed: each sample of a host-coupled stage divided by its step's
    probe against the base's median, and each latency sample's host part (the sample less its
    process's GPU-busy time) likewise; and each process's factor (for the notes). Unchanged (factors
    ``((), ())``) without probes that line up with the samples."""
    found = factors(base, head)
    sides = at_speed(base, head) if found[0] else None
    if sides is None:
        return base, head, ((), ())
    return sides[0], sides[1], found


def at_speed(base: Measurement, head: Measurement) -> tuple[Measurement, Measurement] | None:
    """:func:`adjust`'s two sides, whatever their number of processes (the screen: one process against
    a runner's own rounds); None without probes that line up with the samples on both sides."""
    wall_ref, host_ref = _reference(base.cpu_probe), _reference(base.cpu_probe_host)
    if wall_ref is None or not head.cpu_probe.n:
        return None
    if not all(_lines_up(m.wall, m.cpu_probe) for m in (base, head)):
        return None

    def side(m: Measurement) -> Measurement:
        host = m.host_layers
        if host_ref is not None and m.cpu_probe_host.n:
            host = tuple(
                LayerStat(lay.name, lay.type, _divided(lay.time, m.cpu_probe_host, host_ref))
                if lay.name in HOST_COUPLED and _lines_up(lay.time, m.cpu_probe_host)
                else lay
                for lay in host
            )
        # on a CPU the device's busy time is the CPU's own ops: all of the sample follows its speed
        device = m.busy if m.device.startswith("cuda") else Dist(())
        return replace(m, wall=_host_part_divided(m.wall, device, m.cpu_probe, wall_ref), host_layers=host)

    return side(base), side(head)


def note(found: Factors) -> str:
    """What a verdict that names the latency or a host-coupled stage says of the probe (or '')."""
    fb, fh = found
    if not fb:
        return ""
    return (
        f" (latency and host-coupled stages at each step's CPU speed: a fixed loop took base "
        f"{min(fb):.2f} … {max(fb):.2f}, head {min(fh):.2f} … {max(fh):.2f} x the base's median, "
        "process by process)"
    )


def taken_at_speed(d: Delta) -> bool:
    """Whether :func:`adjust` takes figure ``d`` at each step's CPU speed: the latency and the
    host-coupled stages (the ``input`` copy, CPU pre/post-processing)."""
    return d.scope is Scope.WALL or (d.scope is Scope.HOST and d.name in HOST_COUPLED)


#: what a figure's note says where the loop alone put it over its limit (:func:`measured_too`)
ONLY_AT_SPEED = "over its limit only at each step's CPU speed"


def compared(
    measured: tuple[Measurement, Measurement],
    at_speed: tuple[Measurement, Measurement],
    found: Factors,
    config: GateConfig,
) -> Comparison:
    """The same-host A/B of ``at_speed`` (both sides after :func:`adjust`, ``found`` its factors) by the
    process rule, with :func:`measured_too` against the same A/B as ``measured`` where the loop was
    taken out."""

    def rule(b: Dist, c: Dist, t: Threshold) -> Judgement:
        return process_rule(b, c, t, alpha=config.alpha)

    ab = compare(*at_speed, config, judge=rule)
    return measured_too(ab, compare(*measured, config, judge=rule)) if found[0] else ab


def measured_too(ab: Comparison, as_measured: Comparison) -> Comparison:
    """``ab`` (at each step's CPU speed) where the latency or a host-coupled stage it calls REGRESSED,
    or a doubt that may be slower (AMBIGUOUS), was over its limit as measured (``as_measured``) too;
    where it was not, the figure as measured (UNCHANGED, or faster), with both numbers in its note.
    The loop's factors decide how significant a move is, not whether there was one."""
    raw = {(d.scope, d.name): d for d in as_measured.deltas}

    def judged(d: Delta) -> Delta:
        m = raw.get((d.scope, d.name))
        slower = d.verdict is Verdict.REGRESSED or (d.verdict is Verdict.AMBIGUOUS and d.delta_us > 0)
        if not taken_at_speed(d) or not slower or m is None or m.verdict is Verdict.REGRESSED:
            return d
        if m.baseline_us is None or m.delta_pct is None or d.delta_pct is None:
            return d
        if _over_limit(m):
            return d  # over the limit as measured too: the loop's factors say how significant
        said = (
            f"{d.figure} {m.delta_pct:+.1f} % as measured, {d.delta_pct:+.1f} % at each step's CPU speed: "
            f"{ONLY_AT_SPEED}, which a step's time follows loosely (a CPU 1.5x slower: 1.1x to 2.1x as "
            "long); a regression must show as measured too"
        )
        return replace(m, note=f"{said}; {m.note}" if m.note else said, basis=Basis.ONLY_AT_SPEED)

    return replace(ab, deltas=tuple(judged(d) for d in ab.deltas))


#: what the screen's note says of a figure the loop explained (:func:`explained`)
EXPLAINED = "at each step's CPU speed against this runner's own rounds"


def explained(found: Comparison, at: Comparison) -> Comparison:
    """The screen's ``found`` with each latency or host-coupled failure that the same comparison at
    each step's CPU speed (``at``: :func:`at_speed` of this runner's own rounds and this process, at
    the same thresholds as ``found``) puts within its limit marked unchanged, both numbers in its note.
    Only ever a move away: a figure ``at`` fails and ``found`` does not stays as ``found`` has it.

    Against a runner's own rounds, most latency and host-coupled suspects of A/A runs are the CPU's
    speed, which this lets go in the screen, while host-side changes stay suspects either way
    (docs/sensitivity.md, "The CPU-speed loop in the screen, live")."""
    # within its limit at each step's speed: the own-range rule's AMBIGUOUS (near the slowest own round)
    # over the limit is no explanation, nor is a move too noisy to call
    fine = {(d.scope, d.name): d for d in at.deltas if _within(d)}

    def judged(d: Delta) -> Delta:
        a = fine.get((d.scope, d.name))
        if d.verdict not in found.fail_on or not taken_at_speed(d) or a is None:
            return d
        if d.delta_pct is None or a.delta_pct is None:
            return d
        said = f"{d.delta_pct:+.1f} % here, {a.delta_pct:+.1f} % {EXPLAINED}: the CPU's speed, not the change"
        note = f"{said}; {d.note}" if d.note else said
        return replace(d, verdict=Verdict.UNCHANGED, note=note, basis=Basis.EXPLAINED)

    return replace(found, deltas=tuple(judged(d) for d in found.deltas))


def _within(d: Delta) -> bool:
    if d.verdict in SETTLED:
        return True
    return d.verdict is Verdict.AMBIGUOUS and d.baseline_us is not None and not _over_limit(d)


def _over_limit(d: Delta) -> bool:
    """Whether figure ``d`` moved up by more than its limit (its threshold against its baseline)."""
    return d.baseline_us is not None and d.delta_us > d.threshold.limit_us(d.baseline_us)


def per_process(
    ab: Comparison, at_speed: tuple[Measurement, Measurement], measured: tuple[Measurement, Measurement]
) -> tuple[dict[Key, float], dict[Key, tuple[tuple[float, ...], tuple[float, ...]]]]:
    """Each figure's standard error and process medians (:mod:`kernelgate.verdict.processes`) from the
    sides ``ab`` judged it on: as measured where :func:`measured_too` put it as measured (its move and
    its noise must be of the same numbers: the loop narrows the spread, so at-speed noise would settle
    an as-measured move too soon), else at each step's CPU speed."""
    noise, each = process_noise(*at_speed), process_medians(*at_speed)
    replaced = [(d.scope, d.name) for d in ab.deltas if d.basis is Basis.ONLY_AT_SPEED]
    if replaced:
        raw_noise, raw_each = process_noise(*measured), process_medians(*measured)
        noise |= {k: raw_noise[k] for k in replaced if k in raw_noise}
        each |= {k: raw_each[k] for k in replaced if k in raw_each}
    return noise, each


def _as_measured(base: Measurement, head: Measurement, d: Delta) -> tuple[float, float] | None:
    """The median of figure ``d`` on each side as measured (before :func:`adjust`), or None."""
    if d.scope is Scope.WALL and base.wall.n and head.wall.n:
        return base.wall.median, head.wall.median
    if d.scope is Scope.HOST and d.name in HOST_COUPLED:
        b, h = base.host_layer(d.name), head.host_layer(d.name)
        if b is not None and h is not None and b.time.n and h.time.n:
            return b.time.median, h.time.median
    return None


def settled_here(base: Measurement, head: Measurement, ab: Comparison, found: Factors) -> str:
    """What a pass says of the figures that were over their limit as measured (``base``, ``head``:
    before :func:`adjust`) and not at each step's CPU speed (``ab``: after it), and of those over it
    only at each step's CPU speed (:func:`measured_too`), with the loops' factors; '' where there is
    none. A reader sees both numbers, not a bare pass."""
    fb, fh = found
    if not fb:
        return ""
    parts, only = [], [d.note.split(":")[0] for d in ab.deltas if d.basis is Basis.ONLY_AT_SPEED]
    for d in ab.deltas:
        measured = _as_measured(base, head, d)
        if measured is None or d.verdict is Verdict.REGRESSED or d.delta_pct is None:
            continue
        if d.basis is Basis.ONLY_AT_SPEED:
            continue
        b, h = measured
        if b > 0 and h - b > d.threshold.limit_us(b):
            moved = 100.0 * (h / b - 1.0)
            parts.append(
                f"{d.figure} {moved:+.1f} % as measured, {d.delta_pct:+.1f} % at each step's CPU speed"
            )
    loops = (
        f"a fixed loop took base {min(fb):.2f} … {max(fb):.2f}, head {min(fh):.2f} … {max(fh):.2f} x the "
        "base's median"
    )
    said = [
        f"{', '.join(parts)}: the two sides' steps ran on CPUs of different speed ({loops}), not the change",
        f"{', '.join(only)}: {ONLY_AT_SPEED} ({loops}), not as measured",
    ]
    return "; ".join(text for text, found_any in zip(said, (parts, only), strict=True) if found_any)
