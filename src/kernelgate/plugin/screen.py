"""The screen of one benchmark against its stored baseline: pass, fail, or suspect for the judge.

The stored baseline may come from another host of the same GPU, whose timings differ by a few % per
layer and tens of % on the host side. So, with the same-host judge on (``confirm``), a benchmark is a
*suspect* when what its forward launches changed (:mod:`kernelgate.verdict.structure`, at any size)
or when it fails at a fraction of its thresholds (``screen``), the host side relative to this
runner's speed (:mod:`kernelgate.verdict.hostspeed`), or where a figure over its threshold is left
inside the noise (:func:`open_doubts`); the judge decides suspects at the session's end.
Without the judge (``--kernelgate-no-confirm``) the comparison with the baseline is the verdict.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from kernelgate.baseline import ownrounds
from kernelgate.baseline import store as baseline
from kernelgate.baseline.names import shown
from kernelgate.config import GateConfig, MissingBaseline, Scope, record_command, record_rounds_command
from kernelgate.machine import envdiff, identity
from kernelgate.measure import results as measure
from kernelgate.models.layers import Layers
from kernelgate.plugin.session import MissingBaselineWarning, State
from kernelgate.report.terminal import failure_message
from kernelgate.verdict import hostspeed, ownrange, probespeed, structure, yardstick
from kernelgate.verdict.compare import Comparison, compare
from kernelgate.verdict.delta import SETTLED, Delta, Verdict
from kernelgate.verdict.settled import names

if TYPE_CHECKING:
    from kernelgate.plugin.fixture import KernelGate


def gate(kg: KernelGate, result: measure.Measurement, layers: Layers) -> Comparison | None:
    """Compare ``result`` with its baseline: fail the test, pass it, or hand it to the judge."""
    found = baseline_entry(kg, result)
    if found is None:
        return None
    entry, path = found
    check_entry(entry, result, kg.state, shown(path), kg.target)
    cfg = kg.state.config
    # where other hosts recorded rounds of this entry too, the rounds this runner recorded
    stored, own_note, own = ownrounds.screened_against(entry.measurement, result.round_hosts[0])
    comparison = compare(stored, result, cfg)
    if own_note:
        comparison = dataclasses.replace(comparison, notes=(*comparison.notes, own_note))
    # what the forward launches does not depend on the host: a change there is a suspect at any size
    built = structure.changes(stored, result)
    if built:
        note = f"what the forward launches changed since the baseline: {structure.summary(built)}"
        comparison = dataclasses.replace(comparison, notes=(*comparison.notes, note))
    suspect = comparison.failed
    blind = hostspeed.unscreened(stored, result)
    if blind:
        kg.state.note(blind_summary(shown(path.parent), judged=cfg.confirm))
    if blind and cfg.confirm:
        comparison = dataclasses.replace(comparison, notes=(*comparison.notes, blind_note(kg.target)))
    why = ""
    flagged: tuple[tuple[Scope, str], ...] = ()
    if cfg.confirm:  # suspect at a fraction of the thresholds, the host side relative to this runner
        screened = screening(stored, result, comparison, cfg, own, built, blind)
        suspect, comparison, why, flagged = (
            screened.suspect,
            screened.comparison,
            screened.why,
            screened.flagged,
        )
    if suspect and cfg.confirm:
        # a suspect: base and head on this runner decide after the last test, and the test's
        # reports wait for that verdict (kernelgate.plugin.outcome)
        from kernelgate.plugin.samehost import KERNEL, Suspect

        record = Suspect(kg.node.nodeid, KERNEL, comparison, stored.to_json(), why, result.to_json(), flagged)
        kg.state.add_suspect(record)
        return comparison
    kg.state.add_comparison(comparison)
    if comparison.failed:
        changes = envdiff.changes(entry.measurement.environment, result.environment)
        text = failure_message(comparison, dict(layers.types), shown(path), changes, target=kg.target)
        pytest.fail(text, pytrace=False)
    return comparison


SHOWN = 4  # figures named per suspect


@dataclass(frozen=True)
class Screened:
    """What the screen made of one benchmark (:func:`screening`)."""

    suspect: bool
    comparison: Comparison  # a suspect's against the stored baseline; else the one it is judged by
    why: str  # why it is a suspect, as the run's log says it
    # the figures it flagged, (scope, name), each answered base -> head in the judge's message
    flagged: tuple[tuple[Scope, str], ...] = ()


def screening(
    stored: measure.Measurement,
    result: measure.Measurement,
    comparison: Comparison,
    cfg: GateConfig,
    own: bool,
    built: tuple[structure.Change, ...] = (),
    blind: bool = False,
) -> Screened:
    """With the same-host judge on: whether ``result`` is a suspect, the comparison a benchmark that is
    none is judged by (its host side relative to this runner), why it is one, and what it flagged.

    A suspect fails at ``screen`` times its thresholds, the host side relative to this runner's speed;
    against this runner's own rounds (``own``) only beyond its own processes
    (:mod:`kernelgate.verdict.ownrange`), and the latency and host-coupled stages only where they fail
    at each step's CPU speed too, where those rounds kept the loop (:func:`probespeed.explained`).
    What fails at the full threshold is a suspect too (never failed without the judge), except a
    device-side layer the own-range rule let go, inside the levels of this runner's own rounds
    (:func:`ownrange.at_own_level`): passed and said. So is, against another host's rounds, a figure
    that moved up over its full threshold inside their noise (:func:`open_doubts`): never passed
    unjudged."""
    speed = hostspeed.factor(stored, result)
    here = hostspeed.scaled(stored, speed)
    rule = ownrange.rule(cfg.alpha) if own else None
    screened = compare(here, result, cfg.screening(), judge=rule)
    relative = hostspeed.relative(comparison, compare(here, result, cfg), speed, screened)
    # the CPU-speed loop of this runner's own rounds may explain a latency or host-coupled move away
    # (two more comparisons, only where such a figure failed)
    coupled = any(probespeed.taken_at_speed(d) for d in (*screened.failures, *relative.failures))
    loop = probespeed.at_speed(stored, result) if own and coupled else None
    if loop is not None:
        screened = probespeed.explained(screened, compare(*loop, cfg.screening(), judge=rule))
        relative = probespeed.explained(relative, compare(*loop, cfg))  # the full threshold's guard
    if own and relative.failed and not screened.failed:  # the guard: not a device level of its own rounds
        relative = ownrange.at_own_level(relative, screened, stored, result)
    # against this runner's own rounds the noise is its own processes' spread: inside it, a figure is
    # at a level this runner takes (verdict/ownrange.py); another host's spread says nothing of this one
    doubts = [] if own else open_doubts(relative, screened)
    suspect = bool(built) or blind or screened.failed or relative.failed or bool(doubts)
    why = suspicion(screened, cfg.screen, structure.summary(built) if built else "", blind)
    if relative.failed and not screened.failed:  # the screen let them go: near its own rounds
        over = names(relative.failures[:SHOWN], roles=False)
        near = f"{over} over their thresholds, near this runner's slowest own round"
        why = f"{why}; {near}" if why else near
    if doubts:
        inside = f"{names(doubts[:SHOWN], roles=False)} over their thresholds, inside the noise"
        why = f"{why}; {inside}" if why else inside
    figures = [(d.scope, d.name) for d in (*screened.failures, *relative.failures, *doubts)]
    figures += [(Scope.HOST if c.what == "waits" else Scope.LAYER, c.layer) for c in built]
    flagged = tuple(dict.fromkeys(figures))
    return Screened(suspect, comparison if suspect else relative, why, flagged if suspect else ())


def open_doubts(relative: Comparison, screened: Comparison) -> list[Delta]:
    """The figures (not kernels: cuDNN picks per process) over their full thresholds and up, whose
    move the noise leaves open (AMBIGUOUS) and which the screen at its fraction did not settle
    either: a pass would leave them "not settled" beside a green test, so base and head on this
    runner settle them."""
    settled = {(d.scope, d.name) for d in screened.deltas if d.verdict in SETTLED}
    return [
        d
        for d in relative.deltas
        if d.verdict is Verdict.AMBIGUOUS
        and d.scope is not Scope.KERNEL
        and d.delta_us > 0
        and (d.scope, d.name) not in settled
    ]


def suspicion(screened: Comparison, fraction: float, built: str, blind: bool) -> str:
    """Why the screen made a benchmark a suspect, as the run's log and progress line say it: the
    figures over ``fraction`` of their thresholds (the host side relative to this runner's speed),
    a change in what the forward launches, or a baseline without host times."""
    parts = [f"launches changed: {built}"] if built else []
    if blind:
        parts.append("the baseline has no host times")
    over = screened.failures
    if over:
        more = f" and {len(over) - SHOWN} more" if len(over) > SHOWN else ""
        parts.append(f"{names(over[:SHOWN], roles=False)}{more} over {fraction:.0%} of their thresholds")
    return "; ".join(parts)


def blind_note(target: str) -> str:
    """Why a benchmark whose baseline has no host side went to the judge (its comparison's note)."""
    return (
        "the baseline holds no host time per layer (recorded by a kernelgate before it timed the host "
        "side), so the host side and the waits for the device cannot be screened against it: base and "
        f"head are measured on this runner instead. Re-record to screen them: {record_command(target)}"
    )


def blind_summary(folder: str, judged: bool = True) -> str:
    """The run's note (said once, however many benchmarks it concerns); ``judged``: the same-host
    judge is on (``confirm``)."""
    again = record_rounds_command()
    head = (
        f"kernelgate: {folder}/ holds no host time per layer for some benchmarks (recorded by a kernelgate "
        "before it timed the host side): "
    )
    if not judged:
        return head + (
            "their host side and waits for the device were not compared, and the same-host judge is off "
            f"(confirm = false). Re-record the baseline on this architecture to compare them: {again}"
        )
    return head + (
        "the same-host judge measures each of them, so that a slower host side (a sleep, a new "
        "synchronisation) is not passed unseen. That costs the judge's rounds in every run until the "
        f"baseline is re-recorded on this architecture: {again}"
    )


def baseline_entry(kg: KernelGate, result: measure.Measurement) -> tuple[baseline.Entry, Path] | None:
    """This benchmark's baseline for this GPU, or None once a missing baseline failed or warned.

    A baseline of another GPU (another product of the same architecture, or the same key with
    other memory, max clock or power limit: :func:`envdiff.gpu_differences`) is refused
    unless ``--kernelgate-allow-other-gpu``.
    """
    base_dir, allow = kg.state.config.baseline_dir, kg.state.options.allow_other_gpu
    path = baseline.path_for(base_dir, result.arch)
    recorded = [] if path.exists() else baseline.recorded_keys(base_dir)
    others = identity.same_architecture(result.arch, recorded) if recorded else []
    if others and allow:
        path = baseline.path_for(base_dir, others[0])
    try:
        # the folder names the architecture: this one, or another with --kernelgate-allow-other-gpu
        entries = kg.state.baseline_entries(path, path.parent.name)
    except baseline.BaselineError as exc:
        pytest.fail(f"kernelgate: {exc}", pytrace=False)
    entry = entries.get(kg.benchmark.fullname)
    if entry is None:
        _no_baseline(kg, result, path, others)
        return None
    differences = envdiff.gpu_differences(entry.measurement.environment, result.environment)
    if differences and not allow:
        text = envdiff.other_gpu_message(result.benchmark, shown(path), differences, kg.target)
        pytest.fail(text, pytrace=False)
    if differences or path.parent.name != result.arch:
        listed = "; ".join(str(d) for d in differences) or f"{path.parent.name} for {result.arch}"
        kg.state.note(
            f"{result.benchmark}: compared with another GPU's baseline ({listed}), "
            f"as {envdiff.OTHER_GPU_OPTION} asked"
        )
    return entry, path


def _no_baseline(
    kg: KernelGate, result: measure.Measurement, path: Path, others: list[str] | None = None
) -> None:
    kg.state.add_missing(result.benchmark)
    message = (
        f"kernelgate: no baseline for {result.benchmark!r} on {result.arch} "
        f"(looked in {shown(path)}). Record one on this machine: "
        f"{record_command(kg.target)} and commit {shown(path.parent)}/."
    )
    if others:
        message += (
            f" Baselines of other GPUs of the same architecture exist ({', '.join(others)}); a "
            "timing of one GPU does not hold for another, so they are not used unless "
            f"{envdiff.OTHER_GPU_OPTION} is given."
        )
    if kg.state.config.missing_baseline is MissingBaseline.FAIL:
        pytest.fail(message, pytrace=False)
    warnings.warn(message, MissingBaselineWarning, stacklevel=2)


def check_entry(
    entry: baseline.Entry, result: measure.Measurement, state: State, path: str, target: str
) -> None:
    """A baseline entry that is no yardstick for ``result`` (:func:`yardstick.pair_problems`:
    unreliable, edited by hand, rounds that disagree, implausible numbers) fails the benchmark,
    naming the entry, the numbers and the fix."""
    problems = yardstick.pair_problems(entry, result, state.config, other_gpu=state.options.allow_other_gpu)
    if problems:
        pytest.fail(yardstick.refusal(result.benchmark, path, problems, target), pytrace=False)
