"""Can a profile be trusted? Checks for dropped events and records that do not add up.

torch.profiler (Kineto/CUPTI) can lose events without an error: kernel records of the first
iterations of a session fall "Out-of-range" and are dropped (pytorch/pytorch#192021), launch
records go missing, CUPTI may record nothing at all where profiling is not permitted. A gate that
compared such a profile would see layers get faster or vanish. So every fresh measurement is
checked here; a failed check marks it unreliable (``Measurement.unreliable_reasons``), the gate
measures once more, and an unreliable result is never compared as if it were good.

In an eager forward pass of a fixed input, every iteration launches the same kernels, so:

- each profiled iteration has the same number of device activities, and each kernel the same
  number of launches (``calls_per_iter`` is a whole number);
- every kernel launch call inside an iteration has its kernel record, and every kernel its
  launch record;
- the trace has as many ``ProfilerStep`` ranges as iterations were profiled;
- per iteration, the layers add up to the total, and so do the kernels; busy time <= total.
"""

from __future__ import annotations

import bisect
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from kernelgate.measure.results import Dist, Measurement
from kernelgate.measure.trace import ParsedTrace, Range

if TYPE_CHECKING:
    import pandas as pd

SHOWN = 4  # iterations or kernels named in one reason


class UnreliableProfileWarning(UserWarning):
    """A first profile was unreliable and the benchmark was measured again."""


def _iterations(values: Sequence[int]) -> str:
    shown = ", ".join(map(str, values[:SHOWN]))
    return shown + (f" and {len(values) - SHOWN} more" if len(values) > SHOWN else "")


def check_profile(trace: ParsedTrace, frame: pd.DataFrame, expected_iterations: int, gpu: bool) -> list[str]:
    """Why the attributed profile ``frame`` of ``trace`` cannot be trusted (empty when it can)."""
    what = "kernels" if gpu else "CPU ops"
    steps = len(trace.steps)
    reasons = []
    if steps != expected_iterations:
        reasons.append(
            f"the trace has {steps} profiled iterations (ProfilerStep ranges), {expected_iterations} were run"
        )
    if steps == 0:
        return reasons
    counts = [int(c) for c in frame.groupby("iteration").size().reindex(range(steps), fill_value=0)]
    if not any(counts):
        hint = " (CUPTI unavailable or not permitted? see docs/faults.md)" if gpu else ""
        return [*reasons, f"the profiler recorded no {what} in any of the {steps} iterations{hint}"]
    # the count of a complete iteration: the most common one other than zero (dropping only removes)
    usual, _ = Counter(c for c in counts if c).most_common(1)[0]
    odd = [i for i, c in enumerate(counts) if c != usual]
    if odd:
        listed = ", ".join(f"iteration {i}: {counts[i]}" for i in odd[:SHOWN])
        more = f" and {len(odd) - SHOWN} more" if len(odd) > SHOWN else ""
        reasons.append(
            f"{what} per iteration differ ({listed}{more}; the other {steps - len(odd)}: {usual}): "
            "the profiler dropped events"
        )
    else:
        reasons += _uneven_kernels(frame, steps, what)
    if trace.unlinked:
        reasons.append(
            f"{trace.unlinked} device activities have no launch record (the profiler lost their launch call)"
        )
    orphans = _in_steps(trace.orphan_launches, trace.steps)
    if orphans:
        reasons.append(
            f"{sum(orphans.values())} kernel launches in iteration(s) {_iterations(sorted(orphans))} "
            "have no kernel record (dropped by the profiler, e.g. kineto's 'Out-of-range' records)"
        )
    return reasons


def _uneven_kernels(frame: pd.DataFrame, steps: int, what: str) -> list[str]:
    """Kernels launched a different number of times in different iterations."""
    calls = frame.groupby(["module", "kernel", "iteration"]).size().unstack(fill_value=0)
    calls = calls.reindex(columns=range(steps), fill_value=0)
    uneven = calls[calls.nunique(axis=1) > 1]
    if uneven.empty:
        return []
    module, kernel = (str(part) for part in uneven.index[0])
    example = ", ".join(str(int(v)) for v in uneven.iloc[0].tolist()[: SHOWN * 2])
    return [
        f"{len(uneven)} {what} ran a different number of times per iteration "
        f"(e.g. {module} :: {kernel[:80]}: {example} ...): the profiler dropped events"
    ]


def _in_steps(times: Sequence[float], steps: Sequence[Range]) -> Counter[int]:
    ordered = sorted(steps, key=lambda r: r.start_us)
    starts = [s.start_us for s in ordered]
    found: Counter[int] = Counter()
    for ts in times:
        pos = bisect.bisect_right(starts, ts) - 1
        if pos >= 0 and ts <= ordered[pos].end_us:
            found[pos] += 1
    return found


def _tolerance(parts: int, total: float) -> float:
    # JSON keeps 0.001 µs: each rounded part can be off by 0.0005 µs.
    return 0.001 * (parts + 1) + 1e-9 * abs(total)


def check_record(m: Measurement) -> list[str]:
    """Why the record ``m`` does not hold together (empty when it does): wrong sample counts,
    layers or kernels that do not add up to the total, busy time above the total."""
    n = m.iterations
    if n < 1:
        return [f"{n} iterations"]
    reasons = []
    dists: list[tuple[str, Dist]] = [("total", m.total), ("busy", m.busy)]
    dists += [(f"layer {lay.name}", lay.time) for lay in m.layers]
    dists += [(f"kernel {k.key}", k.time) for k in m.kernels]
    wrong = [(name, d.n) for name, d in dists if d.n != n]
    if wrong:
        name, count = wrong[0]
        more = f" (and {len(wrong) - 1} more)" if len(wrong) > 1 else ""
        return [f"{name} has {count} samples for {n} iterations{more}"]
    for i in range(n):
        total = m.total.samples[i]
        for label, parts in (
            ("layers", [lay.time.samples[i] for lay in m.layers]),
            ("kernels", [k.time.samples[i] for k in m.kernels]),
        ):
            if abs(sum(parts) - total) > _tolerance(len(parts), total):
                reasons.append(
                    f"iteration {i}: the {label} add up to {sum(parts):.3f} µs, the total is {total:.3f} µs"
                )
        if m.busy.samples[i] > total + _tolerance(1, total):
            reasons.append(f"iteration {i}: busy {m.busy.samples[i]:.3f} µs exceeds the total {total:.3f} µs")
        if len(reasons) >= SHOWN:
            break
    return reasons


def measure_reliably(attempt: Callable[[], Measurement], benchmark: str) -> Measurement:
    """``attempt()``, and once more if its result is unreliable; the second result stands.

    An unreliable result keeps its reasons, plus a note that it was measured twice.
    """
    first = attempt()
    if first.reliable:
        return first
    second = attempt()
    if second.reliable:
        warnings.warn(
            f"kernelgate: the first profile of {benchmark!r} was unreliable "
            f"({'; '.join(first.unreliable_reasons)}); measured again, the second one is consistent",
            UnreliableProfileWarning,
            stacklevel=2,
        )
        return second
    return replace(
        second, unreliable_reasons=(*second.unreliable_reasons, "measured twice, unreliable both times")
    )
