"""What the same-host judge's verdicts rest on, kept for a reader who doubts one: each process's
medians (the latency of a step, the GPU total, the host time of each layer), round by round, in
``<out>/samehost.json``; for a cold start, each run's phases (ms) in each round's process. The judge
writes it after every round, so a run cut short keeps what it measured. Rounds alternate the order
of the sides (base first in rounds 1, 3, ...; head first in 2, 4, ...): ``first`` says which process
of a round measured first.

Beside it, ``<out>/samehost-records.json.xz``: every record those verdicts came from (each suspect
with its screen and stored baseline, each process's whole record, base and head), so that a reader,
or a change to the judge's rules, can decide them again offline, exactly (``kernelgate replay``:
:mod:`kernelgate.replay`): the medians of samehost.json alone are not enough to replay a verdict."""

from __future__ import annotations

import json
import lzma
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kernelgate.coldstart.phases import ColdStart
from kernelgate.measure.results import Measurement
from kernelgate.replay import RECORDS, SCHEMA, read_records
from kernelgate.verdict.ab import order

__all__ = ["FILE", "RECORDS", "SCHEMA", "keep", "read_records", "row", "write", "write_records"]

FILE = "samehost.json"


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


Kept = tuple[Mapping[str, Any], bool, Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]]


def keep(out: Path, suspects: Sequence[Kept]) -> None:
    """Both files, after each round of the judge; per suspect: its JSON
    (:meth:`kernelgate.plugin.samehost.Suspect.to_json`), whether it is a kernel benchmark (else a
    cold start), and its records of the base and of the head, round by round."""
    rows = [
        (row if kernel else coldstart_row)(suspect["nodeid"], suspect["screen"]["benchmark"],
                                           {"base": base, "head": head})
        for suspect, kernel, base, head in suspects
    ]  # fmt: skip
    write(out, rows)
    write_records(out, [{"suspect": s, "base": list(b), "head": list(h)} for s, _, b, h in suspects])


def write_records(out: Path, suspects: Sequence[Mapping[str, Any]]) -> Path:
    """``suspects``: per suspect its JSON (:meth:`kernelgate.plugin.samehost.Suspect.to_json`) as
    ``suspect`` and its records, round by round, as ``base`` and ``head``; xz-compressed (lzma preset
    1: the records of a round of yolov8n's configurations are a few MB of JSON)."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / RECORDS
    text = json.dumps({"schema": SCHEMA, "suspects": list(suspects)}, separators=(",", ":"))
    path.write_bytes(lzma.compress(text.encode("utf-8"), preset=1))
    return path
