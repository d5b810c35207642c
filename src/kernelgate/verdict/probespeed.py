"""Each step's CPU speed from a probe that does not depend on the code: the same-host judge's
latency and host-coupled stages at the speed of the CPU each step ran on.

On the lent H100 hosts (16-CPU VMs) the CPU a process runs on changes speed by up to 2x, within
seconds and between processes (:mod:`kernelgate.machine.cpuspeed`). The layers' host times carry
their own yardstick (:mod:`kernelgate.verdict.hostspeed`: each process's factor is the median of its
layers against the base's, so one layer that moved against the others stands out), but the latency
and the host-coupled stages (the ``input`` copy, CPU pre/post-processing) have none: they were judged
as measured, and where every process of the head ran on a slow CPU and none of the base's, an A/A
run failed (H100 host `d04ac8b9`, 2026-11-26: yolo11n fp16's host ``input`` +51.8 %; the layers'
factors 0.95 … 1.21 on the base, 1.16 … 1.91 on the head).

So each timed step is preceded by a fixed Python loop (``Measurement.cpu_probe``, about 0.3 ms,
outside the step's time): how long it took says how fast the CPU ran then, whatever the code under
test. Each sample of the latency (and of a host-coupled stage, ``cpu_probe_host``) is divided by its
own step's loop against the median loop of the base's processes, both sides alike, so the judge's
usual rule (threshold, significance, spread of the processes) decides the latency at the CPU speed of
each step: the speed moves within a process too (that run's first head process: its layers' factor
1.71, its latency within 8 % of the base's). A change that slows the host side of every layer alike
leaves the loop as it was, and the latency shows it.

Only where the layers' host times gave each process a factor (an eager forward, launch-bound): a
CUDA-graph replay waits for the GPU, and its latency does not follow the CPU's speed. Records
without probes (an older kernelgate) are judged as before (:func:`hostspeed.latency_in_doubt`).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import replace

from kernelgate.config import HOST_COUPLED, Scope
from kernelgate.measure.results import Dist, LayerStat, Measurement
from kernelgate.verdict.delta import MIN_PROCESSES, Comparison, Delta, Verdict

Factors = tuple[tuple[float, ...], tuple[float, ...]]


def factors(base: Measurement, head: Measurement) -> Factors:
    """Each process's median probe factor on the timed steps, base and head (> 1: its CPU ran slower
    than the base's median), for the notes; ``((), ())`` where a side has too few processes or no
    probe."""
    reference = _reference(base.cpu_probe)
    pb, ph = base.cpu_probe.round_medians, head.cpu_probe.round_medians
    if reference is None or not head.cpu_probe.n or min(len(pb), len(ph)) < MIN_PROCESSES:
        return (), ()
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


def adjust(
    base: Measurement, head: Measurement, speeds: tuple[Sequence[float], Sequence[float]]
) -> tuple[Measurement, Measurement, Factors]:
    """Both sides with each sample of their latency and host-coupled stages divided by its step's
    probe against the base's median; and each process's factor (for the notes). Unchanged (factors
    ``((), ())``) without probes that line up with the samples, or where the layers gave no host speed
    (``speeds``, :func:`hostspeed.per_process`: a CUDA-graph replay)."""
    found = factors(base, head)
    wall_ref, host_ref = _reference(base.cpu_probe), _reference(base.cpu_probe_host)
    if not found[0] or not speeds[0] or not speeds[1] or wall_ref is None:
        return base, head, ((), ())
    if not all(_lines_up(m.wall, m.cpu_probe) for m in (base, head)):
        return base, head, ((), ())

    def side(m: Measurement) -> Measurement:
        host = m.host_layers
        if host_ref is not None and m.cpu_probe_host.n:
            host = tuple(
                LayerStat(lay.name, lay.type, _divided(lay.time, m.cpu_probe_host, host_ref))
                if lay.name in HOST_COUPLED and _lines_up(lay.time, m.cpu_probe_host)
                else lay
                for lay in host
            )
        return replace(m, wall=_divided(m.wall, m.cpu_probe, wall_ref), host_layers=host)

    return side(base), side(head), found


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
    before :func:`adjust`) and not at each step's CPU speed (``ab``: after it), with the loops'
    factors; '' where there is none. A reader sees both numbers, not a bare pass."""
    fb, fh = found
    if not fb:
        return ""
    parts = []
    for d in ab.deltas:
        measured = _as_measured(base, head, d)
        if measured is None or d.verdict is Verdict.REGRESSED or d.delta_pct is None:
            continue
        b, h = measured
        if b > 0 and h - b > d.threshold.limit_us(b):
            moved = 100.0 * (h / b - 1.0)
            parts.append(
                f"{d.figure} {moved:+.1f} % as measured, {d.delta_pct:+.1f} % at each step's CPU speed"
            )
    if not parts:
        return ""
    return (
        f"{', '.join(parts)}: the two sides' steps ran on CPUs of different speed (a fixed loop took "
        f"base {min(fb):.2f} … {max(fb):.2f}, head {min(fh):.2f} … {max(fh):.2f} x the base's median), "
        "not the change"
    )
