"""What the same-host judge's verdicts rest on, kept for a reader who doubts one: each process's
medians (the latency of a step, the GPU total, the host time of each layer), round by round, in
``<out>/samehost.json``; for a cold start, each run's phases (ms) in each round's process. The judge
writes it after every round, so a run cut short keeps what it measured. Rounds alternate the order
of the sides (base first in rounds 1, 3, ...; head first in 2, 4, ...): ``first`` says which process
of a round measured first."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kernelgate.coldstart.phases import ColdStart
from kernelgate.measure.results import Measurement
from kernelgate.verdict.ab import order

FILE = "samehost.json"
SCHEMA = 1


def row(nodeid: str, benchmark: str, sides: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """One suspect: ``sides`` maps base and head to their records (Measurement JSON), round by round."""
    return _rows(nodeid, benchmark, sides, lambda rec: _process(Measurement.from_json(rec)))


def coldstart_row(
    nodeid: str, benchmark: str, sides: Mapping[str, Sequence[Mapping[str, Any]]]
) -> dict[str, Any]:
    """One cold-start suspect: ``sides`` maps base and head to their records (ColdStart JSON)."""
    return _rows(nodeid, benchmark, sides, lambda rec: {"runs_ms": _runs(ColdStart.from_json(rec))})


def _rows(
    nodeid: str,
    benchmark: str,
    sides: Mapping[str, Sequence[Mapping[str, Any]]],
    figures: Callable[[Mapping[str, Any]], dict[str, Any]],
) -> dict[str, Any]:
    found: dict[str, Any] = {"nodeid": nodeid, "benchmark": benchmark}
    for name, records in sides.items():
        found[name] = [{"round": r + 1, "first": order(("base", "head"), r)[0] == name, **figures(rec)}
                       for r, rec in enumerate(records)]  # fmt: skip
    return found


def _runs(record: ColdStart) -> list[dict[str, Any]]:
    return [
        {k: round(v, 1) for k, v in run.phases_ms.items()} if run.ok else {"error": run.failure}
        for run in record.runs
    ]


def write(out: Path, rows: Sequence[Mapping[str, Any]]) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / FILE
    path.write_text(json.dumps({"schema": SCHEMA, "suspects": list(rows)}, indent=1) + "\n", encoding="utf-8")
    return path


def _process(m: Measurement) -> dict[str, Any]:
    return {"reliable": m.reliable, "wall_us": round(m.wall.median, 1), "total_us": round(m.total.median, 1),
            "host_us": {lay.name: round(lay.time.median, 1) for lay in m.host_layers}}  # fmt: skip
