"""benchmarks/replay_judge.py: the judge's kernel verdicts again from a run's records, by this
checkout's rule (synthetic records here, shaped like tests/test_cpu_probe.py's CUDA-graph A/A run)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest
from factories import benchmarks_script
from test_cpu_probe import GRAPH_BASE, GRAPH_HEAD, replays

from kernelgate.config import GateConfig
from kernelgate.measure.results import Measurement, combine
from kernelgate.plugin.evidence import write_records
from kernelgate.plugin.samehost import KERNEL, Suspect
from kernelgate.verdict import probespeed
from kernelgate.verdict.compare import compare

NAME = "yolo11n-fp16-bs1-640-graph"


def replay_judge() -> ModuleType:
    return benchmarks_script("replay_judge")


def records(folder: Path, base: list[Measurement], head: list[Measurement]) -> Path:
    screen = replace(compare(base[1], combine(head), GateConfig()), benchmark=NAME)
    suspect = Suspect(f"benchmarks/test_yolo.py::test_yolo[{NAME}]", KERNEL, screen, base[1].to_json())
    sides = {"base": [m.to_json() for m in base], "head": [m.to_json() for m in head]}
    return write_records(folder, [{"suspect": suspect.to_json(), **sides}])


def test_a_run_is_decided_again_by_this_checkouts_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = records(tmp_path / "kg-aa-1", replays(GRAPH_BASE, 0), replays(GRAPH_HEAD, 10))
    script = replay_judge()
    (found,) = script.replay(path, GateConfig())
    assert (found.run, found.benchmark, found.outcome, found.processes) == ("kg-aa-1", NAME, "pass", 3)
    # the rule that judged that run (a replay left as measured) gives its false regression again
    monkeypatch.setattr(probespeed, "adjust", lambda b, h: (b, h, ((), ())))
    (earlier,) = script.replay(path, GateConfig())
    assert earlier.outcome == "regression" and "host input +" in earlier.reason, earlier
    monkeypatch.undo()
    monkeypatch.setattr("sys.argv", ["replay_judge.py", str(path), "--config", str(tmp_path / "none.toml")])
    script.main()
    out = capsys.readouterr().out
    assert f"kg-aa-1          {NAME}" in out and out.strip().endswith("pass: 1"), out


def test_fewer_processes_than_the_judge_needs_stay_open(tmp_path: Path) -> None:
    path = records(tmp_path / "kg-aa-2", replays(GRAPH_BASE, 0)[:2], replays(GRAPH_HEAD, 10)[:2])
    (found,) = replay_judge().replay(path, GateConfig())
    assert (found.outcome, found.processes) == ("open", 2)
