"""How fast each CPU of this machine runs the same Python loop now: what ``kernelgate doctor`` reads to
tell a runner whose CPUs run at two speeds.

On some runners (shared VMs) a fixed loop takes 1.3-1.9x as long on half of the CPUs, and which half
is slow changes within seconds; there a launch-bound eager step moves by up to 2x between processes
of the same code, pinned or not, so the same-host judge needs more processes to settle the host side
(docs/sensitivity.md, "Four more H100 hosts: why every configuration is a suspect").
On an Intel hybrid CPU the efficiency cores likewise run the launching thread slower than the
performance cores.

Written by hand: no maintained library times a loop per CPU (pyperf and pytest-benchmark time code,
not CPUs); this moves the calling thread with ``os.sched_setaffinity`` (Linux) and puts it back.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping

LOOP = 150_000  # iterations: about 8-15 ms on the hosts above, 10 ms on the 2-core CI machine
TRIES = 3  # the best of these per CPU
MAX_CPUS = 64  # more: every n-th CPU, so that the probe stays under about 2 s


def _loop(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i
    return total


def probe(loop: int = LOOP, tries: int = TRIES) -> dict[int, float]:
    """Milliseconds of the fastest of ``tries`` runs of a fixed loop on each CPU this process may use;
    empty where the platform cannot move a thread to a CPU (not Linux)."""
    if not hasattr(os, "sched_getaffinity") or not hasattr(os, "sched_setaffinity"):
        return {}
    allowed = sorted(os.sched_getaffinity(0))
    step = max(1, len(allowed) // MAX_CPUS)
    times: dict[int, float] = {}
    try:
        for cpu in allowed[::step]:
            os.sched_setaffinity(0, {cpu})
            best = float("inf")
            for _ in range(tries):
                start = time.perf_counter()
                _loop(loop)
                best = min(best, time.perf_counter() - start)
            times[cpu] = 1e3 * best
    except OSError:
        return {}
    finally:
        os.sched_setaffinity(0, allowed)
    return times


PROBE_LOOP = 5_000  # iterations of the judge's probe: about 0.3 ms on the hosts above


def loop_us(loop: int = PROBE_LOOP) -> float:
    """Microseconds of one run of the fixed loop on whatever CPU this thread runs now: the probe that
    the measurement times before each step (:mod:`kernelgate.verdict.probespeed`). It does not depend
    on the code under test, so base and head processes that run it slower ran on a slower CPU."""
    start = time.perf_counter()
    _loop(loop)
    return 1e6 * (time.perf_counter() - start)


TWO_SPEEDS = 1.3  # the slower CPUs take this many times the fastest's time or more


def slow_cpus(times: Mapping[int, float], ratio: float = TWO_SPEEDS) -> list[int]:
    """The CPUs that took ``ratio`` times the fastest CPU's time or more."""
    if len(times) < 2:
        return []
    fastest = min(times.values())
    return sorted(cpu for cpu, ms in times.items() if fastest > 0 and ms >= ratio * fastest)
