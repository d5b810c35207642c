"""A doubt that the runner's own process-to-process spread explains (host side first): part of the
same-host judge's verdict stage.

On some hosts the processes of the same code run a launch-bound step at two speeds, on both sides:
with more slow processes on the head than on the base, the pooled latency moves tens of % while the
test of the process medians cannot tell, and an A/A run fails on unchanged code after its last round
(docs/sensitivity.md, "Across hosts, run by run").

A change in the code moves every process, the fastest too. So, from ``confirm_min_rounds`` processes a
side on, a host-side figure (the latency of a step, a layer's host time) that is not settled (over its
threshold, or under it by less than its noise) is explained by the runner when both hold:

- the base, too, has processes as slow as the head's typical one (its slowest process median reaches
  the head's median of process medians): the spread is the runner's, not the head's alone;
- the fastest process of each side agrees within half the figure's limit.

Then it is not a doubt and needs no more rounds (more processes of the same runner would show its two speeds
again, up to the last round), and the decision says why, with the numbers. A head with slow processes the
base never shows, or whose fastest process is slower, stays open, then a doubt (`tests/test_bimodal.py`).

The same holds for each fresh process of a cold start (its phases, e.g. `import torch`), and on the device
side, where the modes are the kernels each process chose (cuDNN's algorithms): a CUDA-graph replay's total
can sit at two levels about 1 % apart in different processes, on both sides (docs/sensitivity.md,
"Injections and A/A on two more H100 hosts"). A device-side figure is explained only when the slowest of
each side agree too (within half the limit): a slower mode that only the head shows is a change.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import replace

from kernelgate.config import Scope
from kernelgate.units import duration
from kernelgate.verdict.delta import MIN_PROCESSES, Comparison, Delta, Verdict

#: per figure (scope, name): the median of each process, base and head, in the order of the rounds
Processes = Mapping[tuple[Scope, str], tuple[tuple[float, ...], tuple[float, ...]]]

HOST_SIDE = (Scope.WALL, Scope.HOST, Scope.PHASE)
DEVICE_SIDE = (Scope.TOTAL, Scope.LAYER)
# how close the fastest (device side: and slowest) processes of each side must be, in the figure's
# limit: on the host side within the limit itself (a change over its threshold moves the fastest
# process over it too, and the fast processes of one side can spread by about 10 %:
# docs/sensitivity.md, "Injections and A/A on two more H100 hosts"), on the device side, where a
# process is steady to 0.1 %, within half of it
HOST_AGREE = 1.0
FASTEST_AGREE = 0.5


def explained(d: Delta, base: Sequence[float], head: Sequence[float]) -> str | None:
    """Why the runner's spread explains doubt ``d`` (its process medians ``base``, ``head``, µs), or
    None where it does not."""
    if d.scope not in (*HOST_SIDE, *DEVICE_SIDE) or min(len(base), len(head)) < MIN_PROCESSES:
        return None
    typical = statistics.median(head)
    fast_b, fast_h = min(base), min(head)
    slow_b, slow_h = max(base), max(head)
    if fast_b <= 0 or not _base_shows_the_speeds(d, base, typical):
        return None
    agree = (HOST_AGREE if d.scope in HOST_SIDE else FASTEST_AGREE) * d.threshold.limit_us(fast_b)
    if abs(fast_h - fast_b) > agree:
        return None
    speeds = (
        f"{d.figure}: the processes of both sides ran at different speeds (base {fast_b:.0f} … "
        f"{slow_b:.0f}, head {fast_h:.0f} … {slow_h:.0f} µs)"
    )
    fastest = f"{100.0 * (fast_h / fast_b - 1.0):+.1f} %"
    if d.scope in HOST_SIDE:
        # the percentage alone misleads where the limit is the floor: the difference and the limit too
        within = f"{duration(fast_h - fast_b, signed=True)}, within its limit of {duration(agree)}"
        return (
            f"{speeds} and the fastest of each agree ({fastest}, {within}): this runner's spread, not the "
            "change"
        )
    if slow_h - slow_b > FASTEST_AGREE * d.threshold.limit_us(slow_b):
        return None  # a slower mode than any of the base's
    slowest = f"{100.0 * (slow_h / slow_b - 1.0):+.1f} %"
    return (
        f"{speeds} and the fastest ({fastest}) and slowest ({slowest}) of each agree: the kernels each "
        "process chose, not the change"
    )


def _base_shows_the_speeds(d: Delta, base: Sequence[float], typical: float) -> bool:
    """The base, too, ran processes at the speed of the head's typical one: its slowest reaches it,
    or (host side) the base's own processes spread by more than half the limit (two speeds) and its
    slowest is within the limit of the head's typical process."""
    fast_b, slow_b = min(base), max(base)
    if slow_b >= typical:
        return True
    if d.scope not in HOST_SIDE:
        return False
    two_speeds = slow_b - fast_b >= FASTEST_AGREE * d.threshold.limit_us(fast_b)
    return two_speeds and typical - slow_b <= d.threshold.limit_us(slow_b)


def explain(d: Delta, processes: Processes | None) -> str | None:
    """:func:`explained`, the process medians of ``d`` looked up in ``processes``."""
    return explained(d, *(processes or {}).get((d.scope, d.name), ((), ())))


def host_regressions(ab: Comparison, processes: Processes | None) -> tuple[Comparison, list[str]]:
    """``ab`` with each host-side figure it calls REGRESSED that the runner's two speeds explain made
    UNCHANGED, the explanation its note (what the reports and the exit status read); and those
    explanations."""
    found = {
        d: why
        for d in ab.deltas
        if d.verdict is Verdict.REGRESSED and d.scope in HOST_SIDE and (why := explain(d, processes))
    }
    if not found:
        return ab, []
    deltas = [replace(d, verdict=Verdict.UNCHANGED, note=found[d]) if d in found else d for d in ab.deltas]
    return replace(ab, deltas=tuple(deltas)), list(found.values())
