"""One configuration measured at several places in GPU memory, each iteration averaged over them.

Part of the measure stage. A layer's GPU time follows where its tensors sit in GPU memory: copies of
one model built one after another in one process put a layer at levels a few % apart, against a 2.5 %
layer threshold (``tools/placement.py``; docs/sensitivity.md, "Where a layer's tensors sit"). Where
a configuration's tensors land follows what its process allocated before it (the configurations
measured before it, a judge's child against the screen's process): the neighbour effect and the
levels per process.

So on a GPU each eager and CUDA-graph configuration is measured in :data:`PLACEMENTS` copies: the first as
built, each further one a ``copy.deepcopy`` in a ``torch.cuda.MemPool`` of its own behind pads of its own
sizes, every step of a copy run with its pool active (its activations stay there too). The timed and
profiled step is each copy's in turn, in one profiler session (its fixed cost once), and the record's
iteration *i* is the mean of the *i*-th group of consecutive steps, one step of each copy: each sample, and
so each median, is the mean over the placements. Means, not a pooled median: a layer at two levels has a
pooled median at one of them, chosen by which level got three copies of five; the mean moves by a fifth of
the gap a copy.

Not placed: the CPU (no GPU memory), ``torch.compile`` (a copy compiles again) and a module that
``copy.deepcopy`` cannot copy: measured in one place, each profiled step an iteration of the record.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import statistics
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kernelgate.measure.profile import Schedule
from kernelgate.measure.results import Dist, Measurement

if TYPE_CHECKING:  # the verdict stage reads mixed() without the execution stage's imports
    from kernelgate.measure.execution import Runner

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
        pools = all(hasattr(torch.cuda, name) for name in ("MemPool", "use_mem_pool"))
        self.count = count if make is not None and pools else 1
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
        turn = itertools.cycle(self.runners())

        def step() -> None:
            next(turn).step()

        return step

    def runner(self) -> Runner:
        """The copies as one runner: each copy's step in turn, the profiler's ranges on every copy
        (a CUDA-graph replay's kernels are named after the first copy's eager pass)."""
        runners = self.runners()
        if len(runners) == 1:
            return runners[0]
        return dataclasses.replace(runners[0], step=self.cycle(), net=Copies([r.net for r in runners]))


class Copies:
    """Several copies of a net as one for the profiler's and the host clock's forward hooks: every
    named submodule of every copy (the copies' own roots left out, as a net's root is)."""

    def __init__(self, nets: Sequence[Any]) -> None:
        self.nets = list(nets)

    def named_modules(
        self, memo: Any = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[Any]:
        for net in self.nets:
            for name, module in net.named_modules(prefix=prefix, remove_duplicate=remove_duplicate):
                if name:
                    yield name, module


def copier(net: Any, build: Callable[[Any], Runner]) -> Callable[[], Runner] | None:
    """A ``make`` for :class:`Placements`: ``build(a copy of net)``, with the configuration's own input
    (host memory, pinned: each step copies it into the copy's pool; a clone would not be pinned, and
    its copy took 170-210 µs instead of 47 on the H200); None where the net cannot be copied (then it
    is measured in one place)."""
    if hasattr(net, "_orig_mod"):  # torch.compile's module: each copy would compile again
        return None
    try:
        copy.deepcopy(net)
    except Exception:  # any module may refuse a copy: then it is measured as it is
        return None

    def make() -> Runner:
        return build(copy.deepcopy(net))

    return make


def averaged(m: Measurement, count: int) -> Measurement:
    """The record of ``count`` copies measured in turn (:meth:`Placements.runner`), each group of
    ``count`` consecutive iterations (one of each copy) averaged into one: total, busy, every layer,
    kernel and host layer (a kernel a copy did not launch counted 0 there, as the record has it). The
    latency stays pytest-benchmark's samples of the copies in turn. A record whose iterations do not
    split into such groups (a profile that lost a step: unreliable already) is returned as it is."""
    if count < 2 or m.iterations % count:
        return m
    dists = [m.total, m.busy, *(s.time for s in m.layers), *(k.time for k in m.kernels)]
    dists += [s.time for s in m.host_layers]
    if any(d.n % count for d in dists):  # a figure of another sample count: not averaged, as it is
        return m

    def mean(dist: Dist) -> Dist:  # every figure splits into whole groups: checked above
        return Dist(tuple(by_step(dist.samples, count)))

    def each(stats: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(dataclasses.replace(stat, time=mean(stat.time)) for stat in stats)

    return dataclasses.replace(
        m,
        iterations=m.iterations // count,
        total=mean(m.total),
        busy=mean(m.busy),
        layers=each(m.layers),
        kernels=each(m.kernels),
        host_layers=each(m.host_layers),
        placements=count,
    )


def steps(base: Schedule, asked: int | None, count: int) -> Schedule:
    """The profiler's schedule for ``count`` placements: ``asked`` steps (``--kernelgate-iterations``),
    else ``base``'s, rounded up to whole groups of one step of each copy (24 on a GPU by default: 6
    iterations of 4 placements; 10 asked: 12)."""
    per = -(-(asked or base.active) // count)
    return Schedule(base.wait, base.warmup, per * count)


def by_step(values: Sequence[float], count: int) -> list[float]:
    """Per-step values of the copies in turn, averaged over each group of ``count`` consecutive steps;
    ``values`` as they are where they do not split evenly."""
    if count < 2 or not values or len(values) % count:
        return list(values)
    return [statistics.fmean(values[i : i + count]) for i in range(0, len(values), count)]


def mixed(records: Sequence[Measurement]) -> str:
    """Why records of several methods (measured in one place, in four) are not compared; '' if one."""
    places = sorted({m.placements for m in records})
    if len(places) < 2:
        return ""
    return (
        f"measured in {' and '.join(map(str, places))} places of GPU memory (kernelgate.measure.placement): "
        "their times differ by the method, not the code"
    )
