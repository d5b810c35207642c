"""tools/probe_stats.py: the docs' table of how well the CPU probe follows the runner, from the
judge's records (synthetic ones here, shaped like tests/test_cpu_probe.py's A/A run)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import ModuleType

from factories import tools_script
from test_cpu_probe import (
    BASE_INPUT,
    BASE_SPEED,
    BASE_WALL,
    HEAD_INPUT,
    HEAD_SPEED,
    HEAD_WALL,
    TYPICAL_WALL,
    process,
)

from kernelgate.config import GateConfig
from kernelgate.measure.results import Dist, Measurement
from kernelgate.plugin.evidence import write_records
from kernelgate.plugin.samehost import KERNEL, Suspect
from kernelgate.verdict.compare import compare


def probe_stats() -> ModuleType:
    return tools_script("probe_stats")


def kept(name: str, base: list[Measurement], head: list[Measurement]) -> dict[str, object]:
    screen = compare(base[0], head[0], GateConfig())
    screen = replace(screen, benchmark=name)
    suspect = Suspect(f"benchmarks/test_yolo.py::test_yolo[{name}]", KERNEL, screen, base[0].to_json())
    records = {"base": [m.to_json() for m in base], "head": [m.to_json() for m in head]}
    return {"suspect": suspect.to_json(), **records}


def sides(probed: bool = True) -> tuple[list[Measurement], list[Measurement]]:
    base = [
        process(s, w, i, seed=n, probe=w / TYPICAL_WALL if probed else None)
        for n, (s, w, i) in enumerate(zip(BASE_SPEED, BASE_WALL, BASE_INPUT, strict=True))
    ]
    head = [
        process(s, w, i, seed=10 + n, probe=w / TYPICAL_WALL if probed else None)
        for n, (s, w, i) in enumerate(zip(HEAD_SPEED, HEAD_WALL, HEAD_INPUT, strict=True))
    ]
    return base, head


def test_the_table_reads_the_judges_records(tmp_path: Path) -> None:
    stats = probe_stats()
    base, head = sides()
    unprobed = sides(probed=False)
    replay = [replace(m, host_layers=(), cpu_probe_host=Dist(())) for m in base]  # a CUDA-graph replay
    path = write_records(tmp_path / "kg-aa-1", [kept("eager", base, head), kept("old", *unprobed),
                                                kept("graph", replay, replay)])  # fmt: skip
    (row,) = stats.rows([path])  # the records without loops and the replay are left out
    assert (row.run, row.benchmark, row.processes) == ("kg-aa-1", "eager", 3)
    # the loops before the host-timed steps ran at the layers' speed here: they follow it exactly
    assert all(abs(loop / layers - 1.0) < 0.05 for loop, layers in row.pairs), row.pairs
    # as measured the head's latency moved +17 %; its loops ran at the speed its latency shows
    assert row.moved_pct > 10.0 and abs(row.moved_at_speed_pct) < 3.0, row
    assert row.spread_at_speed < row.spread / 3, row
    summary = stats.summary([row])
    assert summary["processes"] == 6 and summary["correlation"] > 0.95, summary
    assert summary["moved_max"] == row.moved_pct and summary["spread_at_speed"] == row.spread_at_speed
