"""The judge: a suspect from the stored-baseline screen is decided by base and head on one runner.

The screen compares a run with the committed baseline, which another host may have recorded: a
fleet's hosts differ by a few % per layer, tens of % on host-coupled work (the ``input`` copy, CPU
pre/post-processing, cold starts). So the screen only *suspects*. For each suspect the runner
measures the base commit and the head alternately, each round a fresh process per side, and this
module decides from that pair alone (:func:`decide`), with the gate's own noise-aware rule on the
rounds of each side combined (``compare(base, head)``: threshold, floor, Mann-Whitney ``p < alpha``
over the per-iteration samples, and larger than the spread of the round medians of either side).

Rounds follow the evidence: after ``confirm_min_rounds`` per side (3: one process per side cannot tell a
process-level shift from a change) a suspect is settled when every quantity is clearly in or
clearly out; in the grey zone (within a factor of 2 of its limit, or inside the noise) more rounds
are measured, up to ``confirm_max_rounds``. What is still not settled then is INCONCLUSIVE, never a pass.

The screen's delta stays beside the A/B as the runner's offset: when base and head agree but the
screen was far off on a device-side layer, the runner differs from the baseline's host in a way no
uniform offset explains: INCONCLUSIVE, with the hint to re-record (:func:`offset_doubt`).
"""

from __future__ import annotations

import enum
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from kernelgate.config import GateConfig, Scope
from kernelgate.machine import envdiff
from kernelgate.measure import placement
from kernelgate.measure.results import Measurement, combine
from kernelgate.measure.stages import HOST_COUPLED
from kernelgate.verdict import bimodal, hostspeed, ownrange, probespeed, structure
from kernelgate.verdict.compare import Comparison, Delta, Verdict
from kernelgate.verdict.delta import MIN_PROCESSES
from kernelgate.verdict.settled import (
    doubts,
    grey,
    inside_the_noise,
    judged,
    judged_ab,
    latency_doubts,
    names,
    probe_note,
    walls_of,
)

# A device-side layer that the screen found this much further off than the runner's median offset,
# while base and head agree, is not a host offset (in % points, or times its threshold if larger).
OFFSET_DOUBT_PCT = 10.0
OFFSET_DOUBT_THRESHOLDS = 4.0


class Outcome(enum.Enum):
    """A configuration's verdict after the same-host judge."""

    PASS = "pass"
    REGRESSION = "regression"
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class Decision:
    """What the judge decided for one suspect, and from what."""

    benchmark: str
    outcome: Outcome
    reason: str
    ab: Comparison | None = None  # base rounds vs head rounds, on this runner
    rounds: int = 0  # processes per side
    offset_pct: float | None = None  # this runner vs the stored rounds (median layer, head side)
    offset_from: str = "the baseline's host"  # what offset_pct is from: "its own rounds" where they are
    # per judged figure (scope, name): the median of each process, base and head, round by round
    processes: Mapping[tuple[Scope, str], tuple[tuple[float, ...], tuple[float, ...]]] = field(
        default_factory=dict
    )
    # what the head launches and the base does not, in every process of each side
    # (:func:`kernelgate.verdict.structure.confirmed`), as the messages say it
    launches: tuple[str, ...] = ()


def final_doubts(
    ab: Comparison,
    n: int,
    processes: bimodal.Processes | None = None,
    speeds: tuple[Sequence[float], Sequence[float]] = ((), ()),
    probes: probespeed.Factors = ((), ()),
) -> Comparison:
    """An A/B of ``n`` processes a side that measures no more (``kernelgate ab``), as :func:`decide`
    judges its last round: its :func:`doubts` are INCONCLUSIVE, never a pass, except where the
    runner's two speeds explain them, or a host-side regression (``processes``: each figure's process
    medians, base and head; :func:`bimodal.explained`): those are unchanged, and say why. A latency
    that each process's host speed explains (``speeds``: :func:`hostspeed.latency_in_doubt`) is a
    doubt, unless the latency was taken at each process's CPU speed (``probes``: :mod:`probespeed`)."""
    ab, _ = bimodal.host_regressions(ab, processes)
    ab = latency_doubts(ab, speeds, walls_of(processes), probes)
    doubtful, why = doubts(ab), inside_the_noise(n)

    def judged_again(d: Delta) -> Delta:
        if d not in doubtful:
            return d
        runner = bimodal.explain(d, processes)
        if runner:
            return replace(d, verdict=Verdict.UNCHANGED, note=runner)
        return replace(d, verdict=Verdict.INCONCLUSIVE, note=f"{why}; {d.note}" if d.note else why)

    return replace(ab, deltas=tuple(judged_again(d) for d in ab.deltas))


def runner_offset(screen_baseline: Measurement, head: Measurement, config: GateConfig) -> float | None:
    """This runner against the baseline's host: the median relative change of the device-side
    layers above the floor, head side (same code as the baseline, if the head changed nothing)."""
    base = {lay.name: lay.time.median for lay in screen_baseline.layers}
    ratios = [
        lay.time.median / base[lay.name] - 1.0
        for lay in head.layers
        if lay.name in base and lay.name not in HOST_COUPLED and base[lay.name] > max(config.floor_us, 20.0)
    ]
    return 100.0 * statistics.median(ratios) if ratios else None


def offset_doubt(screen: Comparison, offset_pct: float | None) -> str | None:
    """Why the screen's failures are not a host offset although base and head agree (None if they are)."""
    odd = []
    for d in screen.failures:
        if d.scope is not Scope.LAYER or d.name in HOST_COUPLED or d.delta_pct is None:
            continue
        excess = d.delta_pct - (offset_pct or 0.0)
        if excess > max(OFFSET_DOUBT_PCT, OFFSET_DOUBT_THRESHOLDS * 100 * d.threshold.rel):
            odd.append(f"{d.name} {d.delta_pct:+.1f} %")
    if not odd:
        return None
    shown = "n/a" if offset_pct is None else f"{offset_pct:+.1f} %"
    return (
        f"base and head agree on this runner, but against the baseline {', '.join(odd)} while the "
        f"median layer moved {shown}: this runner's environment differs from the baseline's "
        "(another host, or this runner when it recorded its rounds; see the environment changes), not by a "
        "uniform offset"
    )


def decide(
    screen: Comparison,
    screen_baseline: Measurement,
    base_rounds: Sequence[Measurement],
    head_rounds: Sequence[Measurement],
    config: GateConfig,
    *,
    final: bool = False,
) -> Decision | None:
    """The decision for one suspect from its same-host rounds, or None when more rounds are needed:
    at least ``config.confirm_min_rounds`` processes a side, settled at ``config.confirm_max_rounds``
    (or earlier with ``final``: no more rounds will come)."""
    if mixed := placement.mixed([*base_rounds, *head_rounds]):  # a base of a kernelgate before them
        return unsettled(screen.benchmark, f"base and head were {mixed}")
    n = min(len(base_rounds), len(head_rounds))
    if n < config.confirm_min_rounds:
        return None
    measured = combine(base_rounds[:n]), combine(head_rounds[:n])
    found = judged_ab(*measured, config)
    launched = structure.confirmed(base_rounds[:n], head_rounds[:n])
    ab, noise, each, speeds, probes = found.ab, found.noise, found.each, found.speeds, found.probes
    offset = runner_offset(screen_baseline, found.head, config)
    # on a CPU every op is host work: an offset from the baseline's host says nothing there
    device_side = not screen.arch.startswith("cpu")
    decision = settle(
        screen,
        ab,
        n,
        final=final or n >= config.confirm_max_rounds,
        offset_pct=offset,
        noise=noise,
        check_offset=device_side,
        processes=each,
        speeds=speeds,
        probes=probes,
        launched=launched,
    )
    if decision is None:
        return None
    if ownrange.recorded_here(screen_baseline, found.head):  # the stored rounds are this runner's own
        decision = replace(decision, offset_from="its own rounds")
    said = probespeed.settled_here(*measured, decision.ab, probes) if decision.ab is not None else ""
    if said and decision.outcome is Outcome.PASS:
        decision = replace(decision, reason=f"{decision.reason}; {said}")
    moved = _environment_moved(base_rounds[:n], head_rounds[:n])
    if moved and decision.outcome is not Outcome.REGRESSION:
        decision = replace(decision, reason=f"{decision.reason}; {moved}")
    return replace(decision, processes=each)


def _environment_moved(base: Sequence[Measurement], head: Sequence[Measurement]) -> str:
    """What the head's processes ran with that the base's did not (a head that sets ``OMP_NUM_THREADS=1``,
    each side's own packages): a reviewer should see it where nothing slowed down; '' where none."""
    found = {  # not kernelgate's own fault injection (KERNELGATE_SLOW_PHASE: the head's alone)
        str(c)
        for b, h in zip(base, head, strict=False)
        for c in envdiff.changes(b.environment, h.environment)
        if not c.key.startswith("env.KERNELGATE_")
    }
    if not found:
        return ""
    return f"the head ran in another environment than the base on this runner: {', '.join(sorted(found))}"


def settle(
    screen: Comparison,
    ab: Comparison,
    n: int,
    *,
    final: bool,
    offset_pct: float | None = None,
    check_offset: bool = True,
    noise: Mapping[tuple[Scope, str], float] | None = None,
    processes: bimodal.Processes | None = None,
    speeds: tuple[tuple[float, ...], tuple[float, ...]] = ((), ()),
    probes: probespeed.Factors = ((), ()),
    launched: Sequence[structure.Change] = (),
) -> Decision | None:
    """The decision from an A/B comparison of ``n`` processes per side (None: not settled yet and
    more rounds may be measured). ``check_offset=False`` for host-coupled benchmarks (cold starts);
    ``processes``: each figure's process medians, base and head (:func:`bimodal.explained`);
    ``speeds``: each process's host speed, taken out of its layers' host times
    (:func:`hostspeed.per_process`), named where a host time decides; ``probes``: each process's
    CPU speed, taken out of the latency and host-coupled stages (:func:`probespeed.adjust`);
    ``launched``: what the head launches and the base does not in every process of each side
    (:func:`structure.confirmed`): a layer's move there is the change's, not the runner's, so where
    it is not settled under its limit by the last round the suspect is inconclusive, not a pass."""

    # a host-side figure that the runner's two speeds explain is no regression (kernelgate.verdict.
    # bimodal): unchanged in the A/B that the reports show, with why
    ab, spread = bimodal.host_regressions(ab, processes)
    # a latency that each process's host speed explains is a doubt, not a regression (hostspeed)
    walls = walls_of(processes)
    ab = latency_doubts(ab, speeds, walls, probes)
    deltas = judged(ab)
    # the origin of a regression first (kernelgate.verdict.origin), then the rest in forward order
    regressed = [d for d in ab.failures if d in deltas and d.verdict is Verdict.REGRESSED]

    # a regression settles the suspect at once; a pass or a doubt needs every figure settled, or
    # explained by the runner's two speeds, which more rounds of the same runner would only show
    # again. The doubts are among the open figures.
    open_ = grey(ab, noise)
    explained = {d: w for d in open_ if (w := bimodal.explain(d, processes))}
    if not final and not regressed and len(explained) < len(open_):
        return None
    launches = tuple(c.describe() for c in launched)
    said_launches = f"; {launched_note(launches, n)}" if launches else ""
    if regressed:
        said = hostspeed.speeds_note(regressed, speeds) + probe_note(regressed, probes)
        reason = f"base -> head on this runner: {names(regressed)}{said}{said_launches}"
        return Decision(screen.benchmark, Outcome.REGRESSION, reason, ab, n, offset_pct, launches=launches)
    # a figure whose layer launches something else in every head process moved for the change
    changed = structure.figures(launched)
    real = tuple(d for d in open_ if (d.scope, d.name) in changed and d.verdict is not Verdict.AMBIGUOUS)
    if real:
        return Decision(
            screen.benchmark,
            Outcome.INCONCLUSIVE,
            f"after {n} process(es) per side, not settled under their limits: {names(real)}"
            f"{said_launches}",
            ab, n, offset_pct, launches=launches,
        )  # fmt: skip
    doubtful = doubts(ab)
    if any(d not in explained for d in doubtful):
        return Decision(
            screen.benchmark,
            Outcome.INCONCLUSIVE,
            f"{inside_the_noise(n)}: {names(doubtful)}"
            f"{hostspeed.speeds_note(doubtful, speeds, ((), ()) if probes[0] else walls)}"
            f"{probe_note(doubtful, probes)}{said_launches}",
            ab, n, offset_pct, launches=launches,
        )  # fmt: skip
    doubt = offset_doubt(screen, offset_pct) if check_offset else None
    if doubt:
        return Decision(screen.benchmark, Outcome.INCONCLUSIVE, doubt, ab, n, offset_pct, launches=launches)
    agree = "their times agree within their limits" if launches else "base and head agree on this runner"
    reason = "; ".join([agree, *dict.fromkeys([*spread, *explained.values()])]) + said_launches
    return Decision(screen.benchmark, Outcome.PASS, reason, ab, n, offset_pct, launches=launches)


def launched_note(launches: Sequence[str], n: int) -> str:
    """The launches that changed in every process of each side, as a verdict names them."""
    shown = "; ".join(launches[:3]) + (f"; {len(launches) - 3} more" if len(launches) > 3 else "")
    return f"the head launches otherwise in each of its {n} process(es) and no base process does: {shown}"


def unsettled(benchmark: str, reason: str) -> Decision:
    """A suspect the judge could not measure (base not buildable, a child crashed, ...)."""
    return Decision(benchmark, Outcome.INCONCLUSIVE, reason)


def few_processes(max_rounds: int) -> str:
    """What a judge of fewer processes a side than the process test needs cannot do, or ''."""
    if max_rounds >= MIN_PROCESSES:
        return ""
    return (
        f"confirm_max_rounds = {max_rounds}: the same-host judge measures at most {max_rounds} process(es) "
        f"a side, and its test of the process medians needs {MIN_PROCESSES}; the pooled iterations decide "
        "alone, which fails unchanged code where one process of a side runs slow (docs/sensitivity.md). "
        f"Set confirm_max_rounds = {MIN_PROCESSES} or more in [tool.kernelgate] for a verdict a runner's "
        "odd process cannot decide."
    )
