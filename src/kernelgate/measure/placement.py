"""One configuration measured at several places in GPU memory, each iteration averaged over them.

A layer's GPU time follows where its tensors sit in GPU memory. On an H200 (2026-11-27, torch
2.11.0+cu130, ultralytics 8.4.190; ``benchmarks/placement.py``), five copies of yolo11n fp16 built one
after another in one process (every copy kept) put ``model.22`` at 116.5, 124.6, 124.4, 122.7 and 117.2
µs; the first copy measured again, 116.9 µs; three fresh processes gave every copy the same value
within 0.4 µs. Where a configuration's tensors land follows what its process allocated before it (the
configurations measured before it, a judge's child against the screen's process), so a layer sat at
one of a few levels per process, 2-7 % apart, against a 2.5 % layer threshold: the neighbour effect
and the levels per process of docs/sensitivity.md.

So on a GPU each eager and CUDA-graph configuration is measured in :data:`PLACEMENTS` copies (the
first as built, each further one a ``copy.deepcopy`` with its input, in a ``torch.cuda.MemPool`` of its
own behind pads of its own sizes, and every step of a copy runs with its pool active, so that its
activations stay there too), and iteration *i* of the record is the mean of iteration *i* of every
copy: each sample, and so each median, is the mean over the placements. Means, not a pooled median:
a layer at two levels (116.5 or 124.5 µs) has a pooled median at one of them, chosen by which level
got three copies of five; the mean moves by an eighth of the gap a copy.

Not placed: the CPU (no GPU memory), ``torch.compile`` (a copy compiles again) and a module that
``copy.deepcopy`` cannot copy (measured once, as before).
"""

from __future__ import annotations

import copy
import dataclasses
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kernelgate.measure.execution import Runner
from kernelgate.measure.results import Dist, LayerStat, Measurement, combine

PLACEMENTS = 4
SMALL_PAD = 4608  # bytes a copy: shifts the small-block segments (allocations under 1 MiB)
LARGE_PAD = (3 << 20) + 36 * 1024  # bytes a copy: shifts the large-block segments


@dataclass(frozen=True)
class Placed:
    """A copy of the configuration, its steps run in ``pool`` (None: the first copy, as built)."""

    runner: Runner
    pool: Any = None
    pads: tuple[Any, ...] = ()


def in_pool(torch: Any, pool: Any, fn: Callable[[], None]) -> Callable[[], None]:
    """``fn`` with ``pool`` active: what it allocates (a forward's activations) comes from ``pool``."""

    def placed() -> None:
        with torch.cuda.use_mem_pool(pool):
            fn()

    return placed


class Placements:
    """The copies of one configuration: the first as built, the others made on first use by ``make``
    (builds a runner from copies of the net and input; called with the copy's pool active)."""

    def __init__(self, torch: Any, first: Runner, make: Callable[[], Runner] | None, count: int) -> None:
        self.torch = torch
        self.make = make
        self.count = count if make is not None and hasattr(torch.cuda, "MemPool") else 1
        self.placed = [Placed(first)]

    def runners(self) -> list[Runner]:
        while len(self.placed) < self.count:
            self.placed.append(self._copy(len(self.placed)))
        return [p.runner for p in self.placed]

    def _copy(self, index: int) -> Placed:
        torch, make = self.torch, self.make
        assert make is not None  # count is 1 without it
        pool = torch.cuda.MemPool()
        with torch.cuda.use_mem_pool(pool):
            pads = (
                torch.empty(index * SMALL_PAD, dtype=torch.uint8, device="cuda"),
                torch.empty(index * LARGE_PAD, dtype=torch.uint8, device="cuda"),
            )
            runner = make()
        return Placed(
            dataclasses.replace(
                runner,
                step=in_pool(torch, pool, runner.step),
                reference=None if runner.reference is None else in_pool(torch, pool, runner.reference),
            ),
            pool,
            pads,
        )

    def cycle(self) -> Callable[[], None]:
        """One step a call, of each copy in turn: what pytest-benchmark times (the latency)."""
        runners = self.runners()
        turn = iter(range(1 << 62))

        def step() -> None:
            runners[next(turn) % len(runners)].step()

        return step

    def measure(self, one: Callable[[Runner, int], Measurement]) -> Measurement:
        """``one(runner, index)`` for each copy, averaged (:func:`averaged`)."""
        return averaged([one(runner, i) for i, runner in enumerate(self.runners())])


def copier(net: Any, host_input: Any, build: Callable[[Any, Any], Runner]) -> Callable[[], Runner] | None:
    """A ``make`` for :class:`Placements`: ``build(copy of net, copy of host_input)``; None where the
    net cannot be copied (then it is measured in one place)."""
    try:
        copy.deepcopy(net)
    except Exception:  # any module may refuse a copy: then it is measured as it is
        return None

    def make() -> Runner:
        return build(copy.deepcopy(net), host_input.clone())

    return make


def _mean(dist: Dist, count: int) -> Dist:
    parts = dist.round_samples()
    if len(parts) != count or len({len(p) for p in parts}) != 1:
        raise ValueError(f"{count} placements do not line up: samples {[len(p) for p in parts]}")
    return Dist(tuple(statistics.fmean(column) for column in zip(*parts, strict=True)))


def averaged(results: Sequence[Measurement]) -> Measurement:
    """One record from the records of the copies: iteration *i* of each layer, kernel, host layer,
    total and busy time is the mean of iteration *i* of every copy (a copy without a kernel counts 0);
    the latency, the probes, the environment and the host are the first copy's (pytest-benchmark timed
    all copies in turn in the first one's ``wall``); every copy's GPU state and reasons are kept."""
    if len(results) == 1:
        return results[0]
    first, k = results[0], len(results)
    both = combine([dataclasses.replace(m, hosts=()) for m in results])
    return dataclasses.replace(
        both,
        iterations=first.iterations,
        total=_mean(both.total, k),
        busy=_mean(both.busy, k),
        wall=first.wall,
        layers=tuple(LayerStat(lay.name, lay.type, _mean(lay.time, k)) for lay in both.layers),
        kernels=tuple(dataclasses.replace(kern, time=_mean(kern.time, k)) for kern in both.kernels),
        host_layers=tuple(LayerStat(lay.name, lay.type, _mean(lay.time, k)) for lay in both.host_layers),
        hosts=first.hosts,
        cpu_probe=first.cpu_probe,
        cpu_probe_host=first.cpu_probe_host,
    )


def by_step(values: Sequence[float], count: int) -> list[float]:
    """Per-step values taken copy after copy (``count`` copies, the same steps each), averaged per step;
    ``values`` as they are where they do not split evenly."""
    if count < 2 or not values or len(values) % count:
        return list(values)
    n = len(values) // count
    return [statistics.fmean(values[i + c * n] for c in range(count)) for i in range(n)]
