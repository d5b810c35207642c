"""A doubt on the host side that the runner's own process-to-process spread explains.

On some hosts the processes of the same code run a launch-bound step at two speeds: on H100 host
`5c7476c4` (2026-11-26, an A/A run) yolov8n fp32's step took 4.7-5.9 ms in some processes and 7.5-8.3
ms in others, on both sides. With three slow processes of six on the head and two on the base, the
pooled latency moved +25 % while the test of the process medians could not tell: after the last round,
a doubt, and the run failed on unchanged code.

A change in the code moves every process, the fastest too. So, from ``confirm_min_rounds`` processes a
side on, a host-side figure (the latency of a step, a layer's host time) that is not settled (over its
threshold, or under it by less than its noise) is explained by the runner when both hold:

- the base, too, has processes as slow as the head's typical one (its slowest process median reaches
  the head's median of process medians): the spread is the runner's, not the head's alone;
- the fastest process of each side agrees within half the figure's limit.

Then it is not a doubt and needs no more rounds (more processes of the same runner would show its two
speeds again: on that host the judge went on to its sixth round for such figures, 2026-11-26), and the
decision says why, with the numbers. A head with slow processes the base never shows, or whose fastest
process is slower, stays open, then a doubt (`tests/test_bimodal.py`).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from kernelgate.config import Scope
from kernelgate.verdict.delta import MIN_PROCESSES, Delta

HOST_SIDE = (Scope.WALL, Scope.HOST)
FASTEST_AGREE = 0.5  # of the figure's limit


def explained(d: Delta, base: Sequence[float], head: Sequence[float]) -> str | None:
    """Why the runner's spread explains doubt ``d`` (its process medians ``base``, ``head``, µs), or
    None where it does not."""
    if d.scope not in HOST_SIDE or min(len(base), len(head)) < MIN_PROCESSES:
        return None
    typical = statistics.median(head)
    fast_b, fast_h = min(base), min(head)
    if max(base) < typical or fast_b <= 0:
        return None
    if abs(fast_h - fast_b) > FASTEST_AGREE * d.threshold.limit_us(fast_b):
        return None
    return (
        f"{d.figure}: the processes of both sides ran at different speeds (base {fast_b:.0f} … "
        f"{max(base):.0f}, head {fast_h:.0f} … {max(head):.0f} µs) and the fastest of each agree "
        f"({100.0 * (fast_h / fast_b - 1.0):+.1f} %): this runner's spread, not the change"
    )
