"""The host side of each layer: how long its forward ran on the CPU, and the waits it made.

In an eager forward at batch 1 the GPU is busy 14 to 30 % of the wall time (docs/measurements.md): the
rest is the host (Python, the framework, kernel launches, waits). So each top-level layer's host time
is measured too, without the profiler (under it, every op's recording makes the layers 2-3x longer
on the host and 10-40 % noisier from one iteration to the next: docs/sensitivity.md):
forward hooks on the top-level layers and a :class:`Clock` around the stages of a step (``input``,
``preprocess``, ``postprocess``, ``compiled``) read ``perf_counter_ns`` over :data:`ITERATIONS` steps of
their own, after pytest-benchmark's timed rounds (which run without hooks).

The runtime calls that make the host wait for the device or copy (``cudaDeviceSynchronize``,
``cudaStreamSynchronize``, ``cudaMemcpy*``: :data:`kernelgate.measure.trace.SYNC_CALL`) are counted per
layer and iteration from the profile: a new one (``.item()``, ``.cpu()``, ``torch.cuda.synchronize()``)
is a structural change of the host side.

A CUDA-graph replay runs no module's Python forward (one ``cudaGraphLaunch``): it has host times for
its stages only.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from kernelgate.measure.trace import RANGE_PREFIX, UNATTRIBUTED, ParsedTrace, Steps, innermost
from kernelgate.models.layers import Layers

ITERATIONS = 20  # steps timed with the hooks (5 on the CPU: see pipeline.py)
WHOLE = 0.01  # calls or launches a forward closer than this to a whole number are steady


class Clock:
    """Host time per named span and layer in the current step, collected only while ``on``."""

    def __init__(self) -> None:
        self.on = False
        self.spent: dict[str, float] = {}

    def add(self, name: str, start_ns: int) -> None:
        self.spent[name] = self.spent.get(name, 0.0) + (time.perf_counter_ns() - start_ns) / 1000.0


CLOCK = Clock()


@contextlib.contextmanager
def stage(record: Callable[[str], Any], name: str) -> Iterator[None]:
    """A stage of a step: a ``kg/<name>`` profiler range, and its host time while the clock is on."""
    with record(RANGE_PREFIX + name):
        if not CLOCK.on:
            yield
            return
        start = time.perf_counter_ns()
        try:
            yield
        finally:
            CLOCK.add(name, start)


def layer_host_us(
    step: Callable[[], None],
    model: Any,
    layers: Layers,
    iterations: int = ITERATIONS,
    between: Callable[[], None] | None = None,
) -> dict[str, list[float]]:
    """Layer -> its host time (µs) in each of ``iterations`` steps, in the order the layers ran: the
    stages by the clock, ``model``'s top-level layers by forward hooks (``model`` None: stages only).
    ``between`` runs before each step, outside the clock."""
    handles = []
    if model is not None:
        # every module of that name: a configuration measured in several places has one in each copy
        for name, module in model.named_modules():
            if name not in layers.types:
                continue
            started: list[int] = []
            handles.append(
                module.register_forward_pre_hook(lambda m, a, s=started: s.append(time.perf_counter_ns()))
            )
            handles.append(
                module.register_forward_hook(
                    lambda m, a, o, s=started, n=name: CLOCK.add(n, s.pop()) if s else None, always_call=True
                )
            )
    per_step: list[dict[str, float]] = []
    CLOCK.on = True
    try:
        for _ in range(iterations):
            if between is not None:
                between()
            CLOCK.spent = {}
            step()
            per_step.append(CLOCK.spent)
    finally:
        CLOCK.on, CLOCK.spent = False, {}
        for handle in handles:
            handle.remove()
    names: list[str] = []
    for spent in per_step:
        names += [n for n in spent if n not in names]
    return {n: [spent.get(n, 0.0) for spent in per_step] for n in names}


def sync_calls(trace: ParsedTrace, layers: Layers) -> dict[str, dict[str, float]]:
    """Layer -> {runtime call: calls per iteration} for the waiting and copying calls of
    :data:`kernelgate.measure.trace.SYNC_CALL`, each in the innermost ``kg/`` range open on its thread
    (outside every range: ``(unattributed)``)."""
    steps = Steps.of(trace.steps)
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
        if steps.iteration(call.ts) is None:
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
            if whole(b) and whole(a) and round(a) != round(b):
                items.append((name, round(b), round(a)))
        if items:
            out[layer] = tuple(items)
    return out


def describe(waits: tuple[Wait, ...]) -> str:
    return "; ".join(f"{name} {b} -> {a} a forward" for name, b, a in waits)


def whole(calls: float) -> bool:
    """A count a forward that every iteration and process agrees on: a whole number (1.0, not 0.67)."""
    return abs(calls - round(calls)) < WHOLE
