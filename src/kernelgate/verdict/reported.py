"""What the reports read of a same-host decision: the screen's comparison (against the stored
baseline) with the judge's verdicts put in, each judged figure beside its A/B on this runner."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from kernelgate.config import Scope
from kernelgate.units import duration, in_one_unit
from kernelgate.verdict.bimodal import explain
from kernelgate.verdict.compare import Comparison, Delta, Verdict
from kernelgate.verdict.delta import SETTLED
from kernelgate.verdict.samehost import Decision, Outcome
from kernelgate.verdict.settled import doubts, names


def merged(screen: Comparison, decision: Decision) -> Comparison:
    """The screen's comparison with the judge's verdicts: each screen failure becomes REGRESSED
    (confirmed on this runner), UNCHANGED (a host offset) or INCONCLUSIVE, with the A/B beside it."""
    ab = {(d.scope, d.name): d for d in decision.ab.deltas} if decision.ab else {}
    # the A/B's doubts that left the suspect inconclusive (judged figures: never a kernel): not those
    # the runner's two speeds explain, which the judge cleared (kernelgate.verdict.bimodal). A doubt
    # the screen did not fail is shown on its own figure, not on the total, which did not move
    open_ = (
        doubts(decision.ab) if decision.outcome is Outcome.INCONCLUSIVE and decision.ab is not None else ()
    )
    doubted = tuple(d for d in open_ if not explain(d, decision.processes))
    deltas = []
    for d in screen.deltas:
        pair = ab.get((d.scope, d.name))
        if pair is not None:
            d = replace(d, confirm_us=pair.current_us, confirm_base_us=pair.baseline_us)
        if d.verdict in screen.fail_on:
            if pair is not None and pair.verdict in screen.fail_on:
                d = replace(d, note=_ab_note(pair, decision))
            elif decision.outcome is Outcome.INCONCLUSIVE and _in_doubt(pair, doubted):
                d = replace(d, verdict=Verdict.INCONCLUSIVE, note=decision.reason)
            else:
                d = replace(d, verdict=Verdict.UNCHANGED, note=_offset_note(pair, decision))
        elif pair is not None and pair.verdict is Verdict.REGRESSED and d.scope is not Scope.KERNEL:
            # within its threshold (or faster) against the stored baseline, slower from base to head on
            # this runner: the row shows the A/B that decided it, the stored baseline in the note
            d = _ab_row(pair, _ab_note(pair, decision) + _stored(d))
        elif pair is not None and pair in doubted:
            # within its threshold against the stored baseline, not settled from base to head on this
            # runner: the row shows the A/B's figure in doubt
            d = _ab_row(pair, decision.reason + _stored(d), Verdict.INCONCLUSIVE)
        elif d.verdict is Verdict.AMBIGUOUS and pair is not None and _settled(pair):
            # over its threshold but inside the noise against the stored baseline, and base and head on
            # this runner agree: settled here, not a figure "not settled" in a report that passed
            d = replace(d, verdict=Verdict.UNCHANGED, note=_offset_note(pair, decision))
        deltas.append(d)
    # what only the A/B measured (a baseline recorded before the host side was, or the latency of a
    # screen against another host) and found regressed, or left in doubt
    shown = {(d.scope, d.name) for d in screen.deltas}
    for key, d in ab.items():
        if key in shown or d.scope is Scope.KERNEL:
            continue
        if d.verdict is Verdict.REGRESSED:
            deltas.append(_ab_row(d, _ab_note(d, decision)))
        elif d in doubted:
            deltas.append(_ab_row(d, decision.reason, Verdict.INCONCLUSIVE))
    if decision.outcome is Outcome.INCONCLUSIVE and all(
        d.verdict is not Verdict.INCONCLUSIVE for d in deltas
    ):
        deltas = _doubt_on_total(deltas, decision.reason)
    notes = (*screen.notes, f"same-host A/B ({decision.rounds} round(s) per side): {decision.outcome.value}: "
             f"{decision.reason}")  # fmt: skip
    origins = decision.ab.origins if decision.ab else ()
    return replace(screen, deltas=tuple(deltas), notes=notes, origins=origins)


def as_run_ends(decision: Decision, shown: Comparison) -> Decision:
    """The decision as the run ends on it: a pass whose comparison ``shown`` (:func:`merged`) still
    fails is a regression, named by what fails it: a kernel that the screen and base -> head on this
    runner both found slower past its threshold, or a launch that came or went with ``fail_on_new`` /
    ``fail_on_missing``, which the judge's figures (layers, totals, host times, the latency) do not
    weigh. Before, the judge's line read "pass: base and head agree on this runner" over a red
    kernel row that failed the run."""
    if decision.outcome is not Outcome.PASS or not shown.failed:
        return decision
    what = names(shown.failures, roles=False)
    why = f"base -> head on this runner past their thresholds, though the layers and totals agree: {what}"
    return replace(decision, outcome=Outcome.REGRESSION, reason=f"{why}; {decision.reason}")


def _in_doubt(pair: Delta | None, doubted: Sequence[Delta]) -> bool:
    """Whether a screen failure stays in doubt when the judge left its suspect inconclusive: unless the
    A/B's doubts are elsewhere and this figure's A/B settled (a latency in doubt must not make the host
    times the A/B found unchanged read inconclusive too). Where nothing was measured, or the doubt is
    about the stored baseline (a layer
    that moved more than the runner's offset), every screen failure stays in doubt. ``doubted``: the
    A/B's doubts (:func:`kernelgate.verdict.samehost.doubts`)."""
    return pair is None or not doubted or pair in doubted


def _settled(pair: Delta) -> bool:
    """Whether base and head on this runner settled a figure: unchanged, faster, or inside the noise
    and faster (which hides no regression): a passing run must not list as "not settled" what the
    judge measured unchanged, however far the stored baseline of another host is."""
    if pair.verdict is Verdict.AMBIGUOUS:
        return pair.delta_us <= 0
    return pair.verdict in SETTLED


def _ab_row(pair: Delta, note: str, verdict: Verdict | None = None) -> Delta:
    """The A/B's figure as the row (base and head on this runner), with ``note`` (and ``verdict``)."""
    return replace(
        pair,
        verdict=verdict or pair.verdict,
        confirm_us=pair.current_us,
        confirm_base_us=pair.baseline_us,
        note=note,
    )


def _stored(d: Delta) -> str:
    return f"; against the stored baseline {_moved(d)}"


def _doubt_on_total(deltas: list[Delta], reason: str) -> list[Delta]:
    """A suspect that no screen figure failed (a structural change, a baseline without a host side)
    and that the judge could not settle: the doubt goes on its total (else its first figure), so the
    benchmark is inconclusive, never a pass."""
    at = next((i for i, d in enumerate(deltas) if d.scope is Scope.TOTAL), 0)
    return [
        replace(d, verdict=Verdict.INCONCLUSIVE, note=reason) if i == at else d for i, d in enumerate(deltas)
    ]


def _ab_note(pair: Delta, decision: Decision) -> str:
    pct = "" if pair.delta_pct is None else f" ({pair.delta_pct:+.1f} %)"
    role = f"; {pair.note}" if pair.note else ""
    each = decision.processes.get((pair.scope, pair.name))
    shown = ""
    if each is not None:
        shown = f" (each process, round by round: {_processes(*each)})"
    return (
        f"confirmed on this runner: base {duration(pair.baseline_us or 0)} -> head "
        f"{duration(pair.current_us or 0)}{pct}, {decision.rounds} process(es) per side{shown}{role}"
    )


def _moved(d: Delta) -> str:
    pct = "" if d.delta_pct is None else f" ({d.delta_pct:+.1f} %)"
    return f"{duration(d.baseline_us or 0)} -> {duration(d.current_us or 0)}{pct}"


def _processes(base: Sequence[float], head: Sequence[float]) -> str:
    """Each process's median of both sides, in one unit: ``base 101.6 102.0 | head 104.8 104.9 µs``."""
    shown, unit = in_one_unit([*base, *head])
    return f"base {' '.join(shown[: len(base)])} | head {' '.join(shown[len(base) :])} {unit}"


def _offset_note(pair: Delta | None, decision: Decision) -> str:
    offset = ""
    if decision.offset_pct is not None:
        offset = f"; this runner vs {decision.offset_from}: {decision.offset_pct:+.1f} %"
    if pair is None or pair.delta_pct is None:
        return f"not from this change: base and head agree on this runner{offset}"
    return f"not from this change: base -> head {pair.delta_pct:+.1f} % on this runner{offset}"


def answers(flagged: Sequence[tuple[Scope, str]], screen: Comparison, decision: Decision) -> tuple[str, ...]:
    """Each figure the screen flagged, with its answer from base and head on this runner: the verdict
    message says, layer by layer, what the stored baseline showed and what the A/B found, so that
    nothing the judge saw passes unnamed. Then the launches that changed in every process of each side."""
    ab = {(d.scope, d.name): d for d in decision.ab.deltas} if decision.ab else {}
    stored = {(d.scope, d.name): d for d in screen.deltas}
    lines = []
    for key in flagged:
        s, pair = stored.get(key), ab.get(key)
        either = s or pair
        figure = either.figure if either is not None else key[1]
        against = (
            f"stored baseline {_moved(s)}"
            if s is not None and s.baseline_us
            else "not in the stored baseline"
        )
        if pair is None:
            lines.append(f"  {figure}: {against}; not measured base -> head on this runner")
            continue
        limit = pair.threshold.limit_us(pair.baseline_us or 0.0)
        each = decision.processes.get(key)
        shown = f" (each process: {_processes(*each)})" if each else ""
        lines.append(
            f"  {figure}: {against}; base -> head on this runner {_moved(pair)}, limit "
            f"{duration(limit, signed=True)}: {_answer(pair)}{shown}"
        )
    lines += [f"  launches, in every head process and no base process: {c}" for c in decision.launches]
    return tuple(lines)


def _answer(pair: Delta) -> str:
    """What base -> head on this runner found of one figure, in words."""
    if pair.verdict is Verdict.REGRESSED:
        return "slower past its limit"
    if pair.verdict is Verdict.IMPROVED:
        return "faster past its limit"
    if pair.verdict is Verdict.AMBIGUOUS:  # moved by more than its limit, either way
        way = "over" if pair.delta_us > 0 else "faster by more than"
        return f"{way} its limit but inside the noise of this runner"
    if pair.verdict in (Verdict.NEW, Verdict.MISSING):
        return str(pair.verdict.value)
    return "within its limit"
