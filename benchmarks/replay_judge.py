"""The same-host judge's kernel verdicts again, offline, from the records a run kept: what a change to
the judge's rules would have decided on a GPU run, without the GPU (docs/sensitivity.md's replay
tables).

    python benchmarks/replay_judge.py OUT/kg-*/samehost-records.json.xz [--config pyproject.toml]

For each kernel suspect of each records file (``<--kernelgate-out>/samehost-records.json.xz``), the
rule of this checkout (:func:`kernelgate.verdict.samehost.decide`) on the first N processes a side, N
from ``confirm_min_rounds`` on, as the live judge went round by round: the first decision, or ``open``
where the rounds the run had do not settle it (the live judge would have measured another round; what
it would have shown is not known). Cold-start suspects are left out (their judge reads other records).
A line per configuration, then the count of each outcome.
"""

from __future__ import annotations

import argparse
import collections
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kernelgate.config import GateConfig, load_pyproject
from kernelgate.measure.results import Measurement
from kernelgate.plugin.evidence import read_records
from kernelgate.plugin.samehost import KERNEL, Suspect
from kernelgate.verdict import samehost

OPEN = "open"


@dataclass(frozen=True)
class Replayed:
    """One suspect of one run, decided again."""

    run: str  # the records file's folder: kg-aa-1, ...
    benchmark: str
    outcome: str  # pass, regression, inconclusive, or OPEN
    processes: int  # a side, when it was decided (or all the run had)
    reason: str


def replay(records: Path, config: GateConfig) -> list[Replayed]:
    """Every kernel suspect of ``records``, decided by this checkout's rule round by round."""
    out = []
    for kept in read_records(records):
        suspect = Suspect.from_json(kept["suspect"])
        if suspect.kind != KERNEL:
            continue
        base = [m for m in (Measurement.from_json(x) for x in kept["base"]) if m.reliable]
        head = [m for m in (Measurement.from_json(x) for x in kept["head"]) if m.reliable]
        had = min(len(base), len(head))
        stored = Measurement.from_json(suspect.baseline)
        found = None
        for n in range(config.confirm_min_rounds, had + 1):
            last = n == had and n >= config.confirm_max_rounds
            found = samehost.decide(suspect.screen, stored, base[:n], head[:n], config, final=last)
            if found is not None:
                break
        if found is None:
            out.append(Replayed(records.parent.name, suspect.screen.benchmark, OPEN, had, ""))
        else:
            out.append(Replayed(records.parent.name, suspect.screen.benchmark, found.outcome.value,
                                found.rounds, found.reason))  # fmt: skip
    return out


def replay_all(paths: Iterable[Path], config: GateConfig) -> list[Replayed]:
    return [r for path in paths for r in replay(path, config)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("records", nargs="+", type=Path, help="samehost-records.json.xz of the judge's runs")
    what = "the pyproject.toml whose [tool.kernelgate] the judge reads (default: ./pyproject.toml)"
    parser.add_argument("--config", type=Path, default=Path("pyproject.toml"), help=what)
    args = parser.parse_args()
    config = load_pyproject(args.config)[0] if args.config.is_file() else GateConfig()
    found = replay_all(args.records, config)
    if not found:
        raise SystemExit("no kernel suspect in these records")
    for r in found:
        print(f"{r.run:<16} {r.benchmark:<34} {r.outcome:<12} {r.processes} a side  {r.reason[:160]}")
    counts = collections.Counter(r.outcome for r in found)
    print(", ".join(f"{what}: {n}" for what, n in sorted(counts.items())))


if __name__ == "__main__":
    main()
