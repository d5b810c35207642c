"""The screen run again on the judge's records: which suspects against a runner's own rounds it would
let go now, and what a slowdown put into each device layer would do (docs/sensitivity.md, "Rounds
appended late, and layers at a few levels per process").

    python tools/rescreen.py OUT/*/kg-*/samehost-records.json.xz [--inject 3]

Each kernel suspect whose stored baseline is the runner's own rounds (verdict/ownrange.recorded_here)
is screened again from its stored rounds and the screen's own measurement, both kept in the records
(kernelgate.plugin.screen.screening): those it no longer suspects are listed with the lines the run would
print for them. ``--inject PCT`` multiplies each device layer's samples of >= 20 µs by 1 + PCT/100 in
the screen's measurement, one layer at a time, and counts the cases where that layer fails in the screen
(its fraction, by the own-range rule, or the full threshold's guard), with the guard's own-level pass
(verdict/ownrange.at_own_level) and without it.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from kernelgate.config import GateConfig, Scope
from kernelgate.measure.results import Dist, Measurement
from kernelgate.measure.stages import HOST_COUPLED
from kernelgate.plugin.evidence import read_records
from kernelgate.plugin.screen import screening
from kernelgate.report.terminal import let_go_lines
from kernelgate.verdict import hostspeed, ownrange
from kernelgate.verdict.compare import compare

MIN_LAYER_US = 20.0


@dataclass(frozen=True)
class Case:
    """One kernel suspect screened against its runner's own rounds."""

    run: str  # the records' folder
    stored: Measurement
    measured: Measurement


def cases(files: Iterable[Path]) -> Iterator[Case]:
    for path in files:
        for kept in read_records(path):
            suspect = kept["suspect"]
            if suspect.get("kind") != "kernel" or not suspect.get("measured"):
                continue
            stored = Measurement.from_json(suspect["baseline"])
            measured = Measurement.from_json(suspect["measured"])
            if ownrange.recorded_here(stored, measured):
                yield Case(path.parent.name, stored, measured)


def let_go(case: Case, config: GateConfig) -> list[str] | None:
    """The lines a run would print for what the screen passes now; None where it is still a suspect."""
    found = screening(case.stored, case.measured, compare(case.stored, case.measured, config), config, True)
    return None if found.suspect else let_go_lines([found.comparison])


def slowed(run: Measurement, layer: str, factor: float) -> Measurement:
    layers = tuple(
        replace(lay, time=Dist(tuple(v * factor for v in lay.time.samples), lay.time.rounds))
        if lay.name == layer
        else lay
        for lay in run.layers
    )
    return replace(run, layers=layers)


def caught(stored: Measurement, run: Measurement, layer: str, config: GateConfig) -> tuple[bool, bool]:
    """Whether ``layer`` fails in the screen of ``run``: without the own-level pass, and with it."""
    speed = hostspeed.factor(stored, run)
    here = hostspeed.scaled(stored, speed)
    screened = compare(here, run, config.screening(), judge=ownrange.rule(config.alpha))
    relative = hostspeed.relative(compare(stored, run, config), compare(here, run, config), speed)
    passed = ownrange.at_own_level(relative, screened, stored, run)
    key = (Scope.LAYER, layer)
    shown = {(d.scope, d.name) for d in screened.failures}
    return key in shown | {(d.scope, d.name) for d in relative.failures}, key in shown | {
        (d.scope, d.name) for d in passed.failures
    }


def injected(found: Iterable[Case], pct: float, config: GateConfig) -> tuple[int, int, int]:
    """(cases, caught without the own-level pass, caught with it) for +``pct`` % in each device layer."""
    n = before = after = 0
    for case in found:
        for lay in case.stored.layers:
            if lay.time.median < MIN_LAYER_US or lay.name in HOST_COUPLED:
                continue
            old, new = caught(case.stored, slowed(case.measured, lay.name, 1 + pct / 100), lay.name, config)
            n, before, after = n + 1, before + old, after + new
    return n, before, after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("records", nargs="+", type=Path, help="samehost-records.json.xz of the judge's runs")
    parser.add_argument("--inject", type=float, default=None, help="slow each device layer by PCT %%")
    args = parser.parse_args()
    config = GateConfig()
    found = list(cases(args.records))
    if not found:
        raise SystemExit("no kernel suspect screened against its runner's own rounds in these records")
    cleared = 0
    for case in found:
        lines = let_go(case, config)
        if lines is not None:
            cleared += 1
            print(f"{case.run:<16} {case.measured.benchmark}: no longer a suspect")
            for line in lines:
                print(f"    {line}")
    print(f"{len(found)} suspect configuration(s) against their runner's own rounds; {cleared} no longer")
    if args.inject is not None:
        n, before, after = injected(found, args.inject, config)
        print(
            f"+{args.inject:g} % in each device layer of >= {MIN_LAYER_US:g} µs: {n} cases, failed in "
            f"the screen {before} without the own-level pass, {after} with it"
        )


if __name__ == "__main__":
    main()
