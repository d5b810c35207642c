"""The same-host judge's kernel verdicts decided again, offline, from the records a run kept.

The judge writes ``<--kernelgate-out>/samehost-records.json.xz`` after every round: each suspect with
its screen and stored baseline, and every record of each base and head process
(:mod:`kernelgate.plugin.evidence`). ``kernelgate replay FILE...`` decides each kernel suspect again by
this kernelgate's rule and the ``[tool.kernelgate]`` given: on the first N processes a side, N from
``confirm_min_rounds`` on, as the live judge went round by round. What a reviewer who doubts a verdict,
or a kernelgate upgrade, can check without the GPU (docs/sensitivity.md's replay tables come from it,
"A CI job on each GPU of a 4-GPU H200 machine"). Where the rounds a run had do not settle a suspect, it is
``open``: the live judge would have measured another round, and what it would have shown is not known.
Cold-start suspects are left out (their judge reads other records).
"""

from __future__ import annotations

import collections
import json
import lzma
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelgate.config import GateConfig
from kernelgate.measure.results import Measurement
from kernelgate.verdict import reported, samehost
from kernelgate.verdict.compare import Comparison

RECORDS = "samehost-records.json.xz"
SCHEMA = 1
KERNEL = "kernel"  # a suspect's kind (kernelgate.plugin.samehost.KERNEL); the other is a cold start
OPEN = "open"


def read_records(path: Path) -> list[dict[str, Any]]:
    """What the judge wrote (:func:`kernelgate.plugin.evidence.write_records`): per suspect
    ``suspect``, ``base`` and ``head``."""
    data = json.loads(lzma.decompress(path.read_bytes()).decode("utf-8"))
    if data.get("schema") != SCHEMA:
        raise ValueError(f"{path}: schema {data.get('schema')!r}, this kernelgate reads {SCHEMA}")
    return list(data["suspects"])


@dataclass(frozen=True)
class Replayed:
    """One kernel suspect of one run, decided again."""

    run: str  # the records file's folder: kg-aa-1, .kernelgate, ...
    benchmark: str
    outcome: str  # pass, regression, inconclusive, or OPEN
    processes: int  # a side, when it was decided (or all the run had)
    reason: str


def reliable(records: Sequence[Mapping[str, Any]]) -> list[Measurement]:
    """The processes of one side that the judge decides from: each record whose profile can be trusted
    (the live judge, :func:`kernelgate.plugin.deciders.decide_kernel`, and this replay alike)."""
    return [m for m in (Measurement.from_json(x) for x in records) if m.reliable]


def decide_again(kept: Mapping[str, Any], config: GateConfig) -> tuple[str, int, str]:
    """The outcome, processes a side and reason of one kernel suspect's records."""
    suspect = kept["suspect"]
    screen = Comparison.from_json(suspect["screen"])
    stored = Measurement.from_json(suspect["baseline"])
    base, head = reliable(kept["base"]), reliable(kept["head"])
    had = min(len(base), len(head))
    for n in range(config.confirm_min_rounds, had + 1):
        last = n == had and n >= config.confirm_max_rounds
        found = samehost.decide(screen, stored, base[:n], head[:n], config, final=last)
        if found is not None:
            found = reported.as_run_ends(found, reported.merged(screen, found))  # as the run ended
            return found.outcome.value, found.rounds, found.reason
    return OPEN, had, ""


def replay(path: Path, config: GateConfig) -> list[Replayed]:
    """Every kernel suspect of records file ``path``, decided again."""
    out = []
    for kept in read_records(path):
        if kept["suspect"].get("kind") != KERNEL:
            continue
        outcome, processes, reason = decide_again(kept, config)
        benchmark = str(kept["suspect"]["screen"]["benchmark"])
        out.append(Replayed(path.parent.name, benchmark, outcome, processes, reason))
    return out


def lines(found: Sequence[Replayed], width: int = 160) -> list[str]:
    """A line per suspect, then the count of each outcome."""
    out = [
        f"{r.run:<16} {r.benchmark:<34} {r.outcome:<12} {r.processes} a side  {r.reason[:width]}"
        for r in found
    ]
    counts = collections.Counter(r.outcome for r in found)
    return [*out, ", ".join(f"{what}: {n}" for what, n in sorted(counts.items()))]


def failed(found: Sequence[Replayed]) -> bool:
    """Whether a replayed verdict fails (a regression or a doubt)."""
    return any(
        r.outcome in (samehost.Outcome.REGRESSION.value, samehost.Outcome.INCONCLUSIVE.value) for r in found
    )
