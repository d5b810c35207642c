"""How well the CPU probe follows the runner: the table of docs/sensitivity.md ("Each step's CPU speed
from a probe"), from the same-host judge's records of GPU runs.

    python tools/probe_stats.py OUT/kg-*/samehost-records.json.xz

Per eager configuration the judge measured (a CUDA-graph replay has no layer factor and is left out):
each process's loop before its host-timed steps against the base's median, beside the factor of its
layers' host times (kernelgate.verdict.hostspeed.per_process); the latency's process medians as
measured and at each step's loop speed (kernelgate.verdict.probespeed.adjust), their coefficient of
variation over both sides' processes, and base -> head of the pooled medians. Records without loops
(a kernelgate before them) are left out.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kernelgate.measure.results import Measurement, combine
from kernelgate.plugin.evidence import read_records
from kernelgate.verdict import hostspeed, probespeed


@dataclass(frozen=True)
class Row:
    """One judged configuration of one run."""

    run: str
    benchmark: str
    processes: int  # a side
    pairs: tuple[tuple[float, float], ...]  # per process: (its loop factor, its layers' factor)
    moved_pct: float  # base -> head of the pooled latency medians, as measured
    moved_at_speed_pct: float  # the same at each step's loop speed
    spread: float  # coefficient of variation of the latency's process medians, both sides
    spread_at_speed: float


def _spread(values: Sequence[float]) -> float:
    return statistics.stdev(values) / statistics.mean(values) if len(values) > 1 else 0.0


def _row(run: str, benchmark: str, base: Measurement, head: Measurement) -> Row | None:
    b, h, speeds = hostspeed.per_process(base, head)
    if not speeds[0] or not base.cpu_probe_host.n or not head.cpu_probe_host.n:
        return None
    b2, h2, found = probespeed.adjust(b, h)
    if not found[0]:
        return None
    reference = statistics.median(base.cpu_probe_host.samples)
    loops = [m / reference for side in (base, head) for m in side.cpu_probe_host.round_medians]
    pairs = tuple(zip(loops, (*speeds[0], *speeds[1]), strict=True))
    raw = [*b.wall.round_medians, *h.wall.round_medians]
    at_speed = [*b2.wall.round_medians, *h2.wall.round_medians]
    return Row(
        run, benchmark, len(speeds[0]), pairs,
        100.0 * (h.wall.median / b.wall.median - 1.0), 100.0 * (h2.wall.median / b2.wall.median - 1.0),
        _spread(raw), _spread(at_speed),
    )  # fmt: skip


def rows(paths: Iterable[Path]) -> list[Row]:
    """A row per eager configuration with loops in each records file, over all its rounds."""
    out = []
    for path in paths:
        for kept in read_records(path):
            if kept["suspect"].get("kind") != "kernel":
                continue
            base = combine([Measurement.from_json(m) for m in kept["base"]])
            head = combine([Measurement.from_json(m) for m in kept["head"]])
            n = min(len(base.wall.round_medians), len(head.wall.round_medians))
            if n < 2:
                continue
            found = _row(path.parent.name, str(kept["suspect"]["screen"]["benchmark"]), base, head)
            if found is not None:
                out.append(found)
    return out


def summary(found: Sequence[Row]) -> dict[str, float]:
    """The docs' figures over ``found``: processes, the loop-vs-layers correlation and median gap, the
    median spreads, and the range of the latency's moves, as measured and at each step's loop speed."""
    pairs = [p for r in found for p in r.pairs]
    loops, layers = [p[0] for p in pairs], [p[1] for p in pairs]
    return {
        "configurations": float(len(found)),
        "processes": float(len(pairs)),
        "correlation": statistics.correlation(loops, layers) if len(pairs) > 2 else float("nan"),
        "median_gap": statistics.median(abs(x / y - 1.0) for x, y in pairs) if pairs else float("nan"),
        "spread": statistics.median(r.spread for r in found),
        "spread_at_speed": statistics.median(r.spread_at_speed for r in found),
        "moved_min": min(r.moved_pct for r in found),
        "moved_max": max(r.moved_pct for r in found),
        "moved_at_speed_min": min(r.moved_at_speed_pct for r in found),
        "moved_at_speed_max": max(r.moved_at_speed_pct for r in found),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("records", nargs="+", type=Path, help="samehost-records.json.xz of the judge's runs")
    found = rows(parser.parse_args().records)
    if not found:
        raise SystemExit("no eager configuration with the CPU loop in these records (an older kernelgate?)")
    for r in found:
        print(
            f"{r.run:<16} {r.benchmark:<32} {r.processes} a side  latency {r.moved_pct:+6.1f} % as measured, "
            f"{r.moved_at_speed_pct:+6.1f} % at the loop's speed; spread {r.spread:.3f} -> "
            f"{r.spread_at_speed:.3f}"
        )
    for key, value in summary(found).items():
        print(f"{key}: {value:.3f}")


if __name__ == "__main__":
    main()
