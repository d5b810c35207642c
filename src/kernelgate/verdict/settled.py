"""Which figures of a same-host A/B are settled (verdict stage): the A/B as the judge compares it
(:func:`judged_ab`: each process's host speed and each step's CPU speed taken out), the figures the
decision rests on (:func:`judged`), those still in the grey zone of their limits (:func:`grey`), the
doubts among them (:func:`doubts`), and how a message names them (:func:`names`).
:mod:`kernelgate.verdict.samehost` decides from these; docs/verdict.md gives the rule in order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kernelgate.config import GateConfig, Scope
from kernelgate.measure.results import Measurement, combine
from kernelgate.verdict import bimodal, hostspeed, probespeed
from kernelgate.verdict.compare import Basis, Comparison, Delta, Verdict


def is_settled(delta: Delta, noise_us: float | None) -> bool:
    """Clearly in (the noise-aware rule's REGRESSED or IMPROVED on ``confirm_min_rounds`` processes a side)
    or clearly out: under the limit by two standard errors ``noise_us`` of the move (without one:
    under half the limit). AMBIGUOUS, or unchanged close to the limit, is grey."""
    if delta.baseline_us is None or delta.current_us is None:
        return True  # new or missing: structural, more rounds do not change it
    if delta.verdict is Verdict.AMBIGUOUS:
        return False
    limit = delta.threshold.limit_us(delta.baseline_us)
    moved = abs(delta.delta_us)
    if delta.verdict in (Verdict.REGRESSED, Verdict.IMPROVED):
        return True  # over the limit, significant and beyond the spread of the processes of both sides
    return moved + 2 * noise_us <= limit if noise_us is not None else moved <= 0.5 * limit


JUDGED = (Scope.TOTAL, Scope.LAYER, Scope.PHASE, Scope.HOST, Scope.WALL)


def judged(ab: Comparison) -> tuple[Delta, ...]:
    """The deltas the decision rests on: the total, the layers, their host side, the latency and
    cold-start phases (kernels are shown, not gated here: cuDNN picks other algorithms in other
    processes)."""
    return tuple(d for d in ab.deltas if d.scope in JUDGED)


def doubts(ab: Comparison) -> tuple[Delta, ...]:
    """The judged figures that may be slower and are not settled (AMBIGUOUS, moved up): a doubt once
    no more rounds come. One that may be faster hides no regression."""
    return tuple(d for d in judged(ab) if d.verdict is Verdict.AMBIGUOUS and d.delta_us > 0)


def inside_the_noise(n: int) -> str:
    """Why the :func:`doubts` of an A/B of ``n`` processes a side are not settled."""
    return f"after {n} process(es) per side, over threshold but inside the noise of this runner"


#: the figures a round line names per open suspect (a host-side move names every layer: 19 in yolov8n)
SHOWN_OPEN = 6


def still_open(base_rounds: Sequence[Measurement], head_rounds: Sequence[Measurement],
               config: GateConfig) -> str:  # fmt: skip
    """What keeps a suspect open after :func:`decide` asked for more rounds: too few processes, or
    the figures that may be slower and are not settled (shown in the judge's round line)."""
    n = min(len(base_rounds), len(head_rounds))
    if n < config.confirm_min_rounds:
        return f"{n} of at least {config.confirm_min_rounds} process(es) a side"
    found = judged_ab(combine(base_rounds[:n]), combine(head_rounds[:n]), config)
    probes = found.probes
    open_ = grey(latency_doubts(found.ab, found.speeds, walls_of(found.each), probes), found.noise)
    more = f" and {len(open_) - SHOWN_OPEN} more" if len(open_) > SHOWN_OPEN else ""
    said = (
        " (the latency and host-coupled stages at each step's CPU speed)" if probe_note(open_, probes) else ""
    )
    return "within the noise of their limits: " + names(open_[:SHOWN_OPEN]) + more + said


def grey(ab: Comparison, noise: Mapping[tuple[Scope, str], float] | None) -> tuple[Delta, ...]:
    """The figures of an A/B that are not settled yet (see :func:`is_settled`): only those that may be
    slower; a figure that may be faster needs no more rounds."""
    return tuple(
        d for d in judged(ab) if d.delta_us > 0 and not is_settled(d, (noise or {}).get((d.scope, d.name)))
    )


@dataclass(frozen=True)
class AB:
    """A same-host A/B as the judge compares it (:func:`judged_ab`)."""

    head: Measurement  # the head's processes combined, at each process's host speed and step's CPU speed
    ab: Comparison  # the process rule's verdicts (probespeed.compared)
    noise: dict[tuple[Scope, str], float]  # each figure's standard error of the move (probespeed.per_process)
    each: bimodal.Processes  # each figure's process medians, base and head
    speeds: tuple[tuple[float, ...], tuple[float, ...]]  # each process's host speed (hostspeed.per_process)
    probes: probespeed.Factors  # each process's CPU-speed loop (probespeed.adjust)


def judged_ab(base: Measurement, head: Measurement, config: GateConfig) -> AB:
    """Both sides of an A/B (each its processes combined, as measured) as the judge compares them:
    each process's host speed out of its layers' host times (:func:`hostspeed.per_process`: the
    runner's, not the change's), each step's CPU speed out of the host-coupled stages and the latency's
    host part (:func:`probespeed.adjust`: a loop the code does not move), compared by the process rule
    with the loop unable to make a regression (:func:`probespeed.compared`), and each figure's noise
    and process medians from the sides it was judged on (:func:`probespeed.per_process`). The judge
    (:func:`decide`, :func:`still_open`) and ``kernelgate ab`` alike."""
    b, h, speeds = hostspeed.per_process(base, head)
    b, h, probes = probespeed.adjust(b, h)
    ab = probespeed.compared((base, head), (b, h), probes, config)
    noise, each = probespeed.per_process(ab, (b, h), (base, head))
    return AB(h, ab, noise, each, speeds, probes)


def latency_doubts(
    ab: Comparison,
    speeds: tuple[Sequence[float], Sequence[float]],
    walls: tuple[Sequence[float], Sequence[float]],
    probes: probespeed.Factors,
) -> Comparison:
    """:func:`hostspeed.latency_in_doubt` where the latency was not taken at each step's CPU speed
    (records without the loop: the layers' factors are all there is to read it by)."""
    return ab if probes[0] else hostspeed.latency_in_doubt(ab, speeds, walls)


def walls_of(processes: bimodal.Processes | None) -> tuple[Sequence[float], Sequence[float]]:
    """Each process's latency, base and head (empty where none was measured)."""
    return (processes or {}).get((Scope.WALL, "wall"), ((), ()))


def probe_note(named: Sequence[Delta], probes: probespeed.Factors) -> str:
    """:func:`probespeed.note` where ``named`` holds the latency or a host-coupled stage."""
    coupled = any(probespeed.taken_at_speed(d) and d.basis is not Basis.ONLY_AT_SPEED for d in named)
    return probespeed.note(probes) if coupled else ""


def names(deltas: Sequence[Delta], roles: bool = True) -> str:
    """``model.6 +4.3 % (origin), wall +8.2 %``: the figures as a message names them; ``roles=False``
    leaves out the origin roles (the stored-baseline screen names no origin)."""

    def role(d: Delta) -> str:
        if not roles:
            return ""
        return (
            " (origin)"
            if d.note.startswith("origin:")
            else " (after the origin)"
            if "shifted" in d.note
            else ""
        )

    return ", ".join(
        d.figure + ("" if d.delta_pct is None else f" {d.delta_pct:+.1f} %") + role(d) for d in deltas
    )
