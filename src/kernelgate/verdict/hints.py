"""Why a layer or a benchmark may have got slower, where the measurements show it.

Each hint is read off the two measurements, never guessed: a kernel that was replaced by another
in the same module, launches per iteration that grew, launch facts (grid, block, registers, shared
memory, est. achieved occupancy) that changed, host overhead (wall - GPU busy) that grew, and
clock-event reasons that NVML reported at the end of the run.
"""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from kernelgate.measure.naming import kernel_label, module_label
from kernelgate.measure.results import KernelStat, Measurement
from kernelgate.measure.timesplit import Bound, busy_name, classify, is_gpu
from kernelgate.units import duration

EXAMPLES = 3
OCCUPANCY_DROP_POINTS = 5.0
HOST_OVERHEAD_GROWTH = 0.05
HOST_OVERHEAD_FLOOR_US = 5.0
SHAPE_FIELDS = ("grid", "block", "registers", "shared_memory")
IDLE_CLOCK_REASONS = {"0x0", "0x1"}


class HintKind(enum.Enum):
    KERNEL_SWAPPED = "kernel swapped"
    MORE_LAUNCHES = "more launches"
    LAUNCH_SHAPE_CHANGED = "grid/block changed"
    OCCUPANCY_DROPPED = "occupancy dropped"
    HOST_OVERHEAD_GREW = "host overhead grew"
    CLOCKS_HELD_DOWN = "clocks held down"


@dataclass(frozen=True)
class Hint:
    kind: HintKind
    text: str


def _examples(items: list[str]) -> str:
    shown = "; ".join(items[:EXAMPLES])
    return shown + (f"; and {len(items) - EXAMPLES} more" if len(items) > EXAMPLES else "")


def _name(k: KernelStat) -> str:
    return f"{module_label(k.module, k.layer)} {kernel_label(k.name)}"


def layer_hints(layer: str, base: Measurement, current: Measurement) -> tuple[Hint, ...]:
    before = {k.key: k for k in base.kernels if k.layer == layer}
    after = {k.key: k for k in current.kernels if k.layer == layer}
    matched = [(before[key], after[key]) for key in after if key in before]
    hints = [*_swapped(before, after), *_more_launches(matched)]
    hints += _launch_changes(matched)
    return tuple(hints)


def _swapped(before: dict[str, KernelStat], after: dict[str, KernelStat]) -> Iterable[Hint]:
    gone: dict[str, list[KernelStat]] = defaultdict(list)
    new: dict[str, list[KernelStat]] = defaultdict(list)
    for key, k in before.items():
        if key not in after:
            gone[k.module].append(k)
    for key, k in after.items():
        if key not in before:
            new[k.module].append(k)
    swaps = [
        f"{module_label(module, gone[module][0].layer)}: "
        f"{', '.join(kernel_label(k.name) for k in gone[module])} → "
        f"{', '.join(kernel_label(k.name) for k in new[module])}"
        for module in gone
        if module in new
    ]
    if swaps:
        yield Hint(
            HintKind.KERNEL_SWAPPED,
            f"another kernel ran in {len(swaps)} module(s) (cuDNN/cuBLAS picked another algorithm, "
            f"or the code changed): {_examples(swaps)}",
        )


def _per_launch(k: KernelStat) -> float:
    return k.time.median / k.calls if k.calls else 0.0


def _more_launches(matched: list[tuple[KernelStat, KernelStat]]) -> Iterable[Hint]:
    more = [(b, c) for b, c in matched if c.calls > b.calls]
    if not more:
        return
    steady = all(abs(_per_launch(c) - _per_launch(b)) <= 0.1 * _per_launch(b) for b, c in more)
    ratios = {c.calls / b.calls for b, c in more if b.calls}
    if len(more) == len(matched) and len(ratios) == 1:
        b, c = more[0]
        what = (
            f"all {len(more)} kernels of the layer ran {ratios.pop():g} times as often per iteration "
            f"({b.calls:g} → {c.calls:g})"
        )
    else:
        items = [f"{_name(c)} {b.calls:g} → {c.calls:g}" for b, c in more]
        what = f"{len(more)} kernel(s) ran more often per iteration ({_examples(items)})"
    tail = (
        "and each launch takes as long as before: the layer does more work per forward, "
        "its kernels are not slower"
        if steady
        else "and some launches also take longer"
    )
    yield Hint(HintKind.MORE_LAUNCHES, f"{what}, {tail}")


def _launch_changes(matched: list[tuple[KernelStat, KernelStat]]) -> Iterable[Hint]:
    shapes, occupancy = [], []
    for b, c in matched:
        if not (b.launch and c.launch):
            continue
        changed = [
            f"{f} {b.launch.get(f)} → {c.launch.get(f)}"
            for f in SHAPE_FIELDS
            if b.launch.get(f) != c.launch.get(f)
        ]
        if changed:
            shapes.append(f"{_name(c)}: {', '.join(changed)}")
        occ_b, occ_c = float(b.launch.get("occupancy_pct", 0.0)), float(c.launch.get("occupancy_pct", 0.0))
        if occ_b > 0 and occ_c > 0 and occ_b - occ_c >= OCCUPANCY_DROP_POINTS:
            occupancy.append(f"{_name(c)}: {occ_b:.0f} % → {occ_c:.0f} %")
    if shapes:
        yield Hint(HintKind.LAUNCH_SHAPE_CHANGED, f"launch configuration changed: {_examples(shapes)}")
    if occupancy:
        yield Hint(HintKind.OCCUPANCY_DROPPED, f"est. achieved occupancy dropped: {_examples(occupancy)}")


def benchmark_hints(base: Measurement, current: Measurement) -> tuple[Hint, ...]:
    hints = []
    if base.wall.n and current.wall.n:
        before, after = base.host_overhead_us, current.host_overhead_us
        if after - before > max(HOST_OVERHEAD_GROWTH * before, HOST_OVERHEAD_FLOOR_US):
            share = current.busy.median / current.wall.median if current.wall.median else 0.0
            growth = f" ({100 * (after - before) / before:+.1f} %)" if before else ""
            gpu = is_gpu(current.device)
            busy = (
                f"the GPU is busy {100 * share:.0f} % of the wall time"
                if gpu
                else f"CPU operators run {100 * share:.0f} % of the wall time"
            )
            why = (
                "launch-bound: Python and kernel-launch cost count more than kernel time"
                if gpu
                else "overhead-bound: Python and framework cost count more than operator time"
            )
            bound = f"{busy}, so this benchmark is {why}" if classify(share) is Bound.HOST else busy
            hints.append(
                Hint(
                    HintKind.HOST_OVERHEAD_GREW,
                    f"host overhead (wall - {busy_name(current.device)}) grew "
                    f"{duration(before)} → {duration(after)}{growth} while the wall time went "
                    f"{duration(base.wall.median)} → {duration(current.wall.median)}; {bound}",
                )
            )
    reason_b = base.environment.get("clock_event_reasons")
    reason_c = current.environment.get("clock_event_reasons")
    if reason_c and reason_c != reason_b and reason_c not in IDLE_CLOCK_REASONS:
        hints.append(
            Hint(
                HintKind.CLOCKS_HELD_DOWN,
                f"NVML clock-event reasons {reason_b or '—'} → {reason_c} at the end of the run: "
                "the GPU clocks were held down (power, thermal or clock settings); "
                "rerun before trusting the numbers",
            )
        )
    return tuple(hints)
