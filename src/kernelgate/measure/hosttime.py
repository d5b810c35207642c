"""The host side of each layer: how long its forward ran on the CPU, and the waits it made.

In an eager forward at batch 1 the GPU is busy 14 to 30 % of the wall time (docs/measurements.md): the
rest is the host (Python, the framework, kernel launches, waits). So each top-level layer's host time
is measured too: the length of its ``kg/<layer>`` range on the CPU per profiled iteration (the
profiler's own cost per op is in it, the same on both sides of a comparison). And the runtime calls
that make the host wait for the device or copy (``cudaDeviceSynchronize``, ``cudaStreamSynchronize``,
``cudaMemcpy*``: :data:`kernelgate.measure.trace.SYNC_CALL`) are counted per layer and iteration: a
new one (``.item()``, ``.cpu()``, ``torch.cuda.synchronize()``) is a structural change of the host side.

A CUDA-graph replay runs no module's Python forward (one ``cudaGraphLaunch``), a compiled forward one
``compiled`` range: they have host times only for what has a range.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Mapping

from kernelgate.measure.attribute import UNATTRIBUTED, innermost
from kernelgate.measure.trace import ParsedTrace, Range
from kernelgate.models.layers import Layers


def _iteration_of(ts: float, starts: list[float], steps: list[Range]) -> int | None:
    pos = bisect.bisect_right(starts, ts) - 1
    if pos < 0 or ts > steps[pos].end_us:
        return None
    return pos


def _steps(trace: ParsedTrace) -> tuple[list[float], list[Range]]:
    steps = sorted(trace.steps, key=lambda r: r.start_us)
    return [s.start_us for s in steps], steps


def layer_host_us(trace: ParsedTrace, layers: Layers) -> dict[str, list[float]]:
    """Top-level layer -> its host time (µs) in each iteration, in the order the layers first ran.

    A layer's range is the one named exactly as the layer (``kg/model.9``, ``kg/preprocess``); a layer
    called twice in an iteration counts both calls."""
    starts, steps = _steps(trace)
    out: dict[str, list[float]] = {}
    for r in sorted(trace.ranges, key=lambda r: r.start_us):
        if r.name not in layers.types:
            continue
        iteration = _iteration_of(r.start_us, starts, steps)
        if iteration is None:
            continue
        times = out.setdefault(r.name, [0.0] * len(steps))
        times[iteration] += r.end_us - r.start_us
    return out


def sync_calls(trace: ParsedTrace, layers: Layers) -> dict[str, dict[str, float]]:
    """Layer -> {runtime call: calls per iteration} for the waiting and copying calls of
    :data:`kernelgate.measure.trace.SYNC_CALL`, each in the innermost ``kg/`` range open on its thread
    (outside every range: ``(unattributed)``)."""
    starts, steps = _steps(trace)
    if not steps:
        return {}
    by_thread: dict[int, list[tuple[float, int]]] = {}
    for i, call in enumerate(trace.syncs):
        by_thread.setdefault(call.tid, []).append((call.ts, i))
    module_of: dict[int, str] = {}
    for tid, calls in by_thread.items():
        module_of.update(innermost([r for r in trace.ranges if r.tid == tid], calls))
    counts: Counter[tuple[str, str]] = Counter()
    for i, call in enumerate(trace.syncs):
        if _iteration_of(call.ts, starts, steps) is None:
            continue
        module = module_of.get(i, UNATTRIBUTED)
        layer = layers.layer_of(module) if module != UNATTRIBUTED else UNATTRIBUTED
        counts[(layer, call.name)] += 1
    out: dict[str, dict[str, float]] = {}
    for (layer, name), n in counts.items():
        out.setdefault(layer, {})[name] = n / len(steps)
    return out


Wait = tuple[str, int, int]  # (runtime call, calls a forward before, after)


def sync_changes(
    base: Mapping[str, Mapping[str, float]], current: Mapping[str, Mapping[str, float]]
) -> dict[str, tuple[Wait, ...]]:
    """Layer -> the waits and copies whose count a forward changed, steadily (a whole number a forward
    on both sides; a call in some iterations or some processes only is left out)."""
    out: dict[str, tuple[Wait, ...]] = {}
    for layer in [*current, *(n for n in base if n not in current)]:
        before, after = base.get(layer, {}), current.get(layer, {})
        items = []
        for name in [*after, *(n for n in before if n not in after)]:
            b, a = before.get(name, 0.0), after.get(name, 0.0)
            if _whole(b) and _whole(a) and round(a) != round(b):
                items.append((name, round(b), round(a)))
        if items:
            out[layer] = tuple(items)
    return out


def describe(waits: tuple[Wait, ...]) -> str:
    return "; ".join(f"{name} {b} -> {a} a forward" for name, b, a in waits)


def _whole(calls: float) -> bool:
    return abs(calls - round(calls)) < 0.01
