"""Attribute every activity to the profiler step (iteration) and the module that launched it.

A kernel belongs to the innermost ``kg/<module path>`` range open on its launching thread at the
time of its launch call. The top-level layer is the longest configured layer name that prefixes
the module path (``model.22`` for ``model.22.cv2.0.0.conv``). Work launched inside a step but
outside every module range goes to :data:`UNATTRIBUTED`; work outside every step is not counted.
"""

from __future__ import annotations

import functools
import re

import pandas as pd

from kernelgate.measure.trace import UNATTRIBUTED as UNATTRIBUTED
from kernelgate.measure.trace import Activity, ParsedTrace, Steps, innermost
from kernelgate.models.layers import Layers

COLUMNS = [
    "iteration",
    "layer",
    "layer_type",
    "module",
    "kernel",
    "kind",
    "start_us",
    "dur_us",
    "grid",
    "block",
    "registers",
    "shared_memory",
    "occupancy_pct",
]


@functools.lru_cache(maxsize=65536)
def normalize_kernel_name(name: str) -> str:
    """A kernel's stable identity: no ``void`` prefix, no parameter list, no trailing counters.

    Cached: a profile names the same few hundred kernels in every iteration, and without the cache
    this function is a sixth of the quick set's time (docs/measurements.md, "Figures behind the code's
    rules")."""
    text = " ".join(name.split())
    text = text.removeprefix("void ")
    if text.endswith(")"):
        depth = 0
        for i in range(len(text) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(text[i], 0)
            if depth == 0:
                head = text[:i].rstrip()
                # keep operator() and lambdas intact: only cut a real parameter list
                if head and not head.endswith("operator"):
                    text = head
                break
    if text.startswith("triton"):
        text = re.sub(r"_\d+$", "", text)
    return text


def attribute(trace: ParsedTrace, layers: Layers) -> pd.DataFrame:
    """One row per counted activity, with its iteration (0-based), layer, module and kernel name."""
    steps = Steps.of(trace.steps)
    by_thread: dict[int, list[tuple[float, int]]] = {}
    for i, act in enumerate(trace.activities):
        if act.launch_tid is not None and act.launch_ts is not None:
            by_thread.setdefault(act.launch_tid, []).append((act.launch_ts, i))
    module_of: dict[int, str] = {}
    for tid, launches in by_thread.items():
        module_of.update(innermost([r for r in trace.ranges if r.tid == tid], launches))

    rows = []
    for i, act in enumerate(trace.activities):
        iteration = steps.iteration(act.launch_ts if act.launch_ts is not None else act.start_us)
        if iteration is None:
            continue
        module = module_of.get(i, UNATTRIBUTED)
        layer = layers.layer_of(module) if module != UNATTRIBUTED else UNATTRIBUTED
        rows.append(_row(act, iteration, layer, layers.type_of(layer), module))
    return pd.DataFrame(rows, columns=COLUMNS)


def _row(act: Activity, iteration: int, layer: str, layer_type: str, module: str) -> list[object]:
    facts = act.launch
    return [
        iteration,
        layer,
        layer_type,
        module,
        normalize_kernel_name(act.name),
        act.kind,
        act.start_us,
        act.dur_us,
        "x".join(map(str, facts.grid)) if facts else "",
        "x".join(map(str, facts.block)) if facts else "",
        facts.registers if facts else 0,
        facts.shared_memory if facts else 0,
        facts.occupancy_pct if facts else 0.0,
    ]


def busy_us(frame: pd.DataFrame) -> pd.Series:
    """Per iteration, the time the device was busy: the union of its activity intervals."""
    result = {}
    for iteration, group in frame.groupby("iteration"):
        total = 0.0
        end = float("-inf")
        for start, dur in sorted(zip(group["start_us"], group["dur_us"], strict=True)):
            stop = start + dur
            if start >= end:
                total += dur
            elif stop > end:
                total += stop - end
            end = max(end, stop)
        result[iteration] = total
    return pd.Series(result, dtype=float)
