"""``kernelgate replay``: the judge's kernel verdicts again from a run's records, by this kernelgate's
rule (synthetic records here, shaped like tests/test_cpu_probe.py's CUDA-graph A/A run)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from test_cpu_probe import GRAPH_BASE, GRAPH_HEAD, replays

from kernelgate import cli
from kernelgate import replay as judge_replay
from kernelgate.config import GateConfig
from kernelgate.measure.results import Measurement, combine
from kernelgate.plugin.evidence import read_records, write_records
from kernelgate.plugin.samehost import KERNEL, Suspect
from kernelgate.verdict import probespeed
from kernelgate.verdict.compare import compare

NAME = "yolo11n-fp16-bs1-640-graph"


def records(folder: Path, base: list[Measurement], head: list[Measurement]) -> Path:
    screen = replace(compare(base[1], combine(head), GateConfig()), benchmark=NAME)
    suspect = Suspect(f"benchmarks/test_yolo.py::test_yolo[{NAME}]", KERNEL, screen, base[1].to_json())
    sides = {"base": [m.to_json() for m in base], "head": [m.to_json() for m in head]}
    return write_records(folder, [{"suspect": suspect.to_json(), **sides}])


def test_a_run_is_decided_again_by_this_kernelgates_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = records(tmp_path / "kg-aa-1", replays(GRAPH_BASE, 0), replays(GRAPH_HEAD, 10))
    assert judge_replay.KERNEL == KERNEL and read_records(path)  # the plugin writes what replay reads
    (found,) = judge_replay.replay(path, GateConfig())
    assert (found.run, found.benchmark, found.outcome, found.processes) == ("kg-aa-1", NAME, "pass", 3)
    assert cli.main(["replay", str(path), "--config", str(tmp_path / "none.toml")]) == 0
    out = capsys.readouterr().out
    assert f"kg-aa-1          {NAME}" in out and out.strip().endswith("pass: 1"), out
    # the rule that judged that run (a replay left as measured) gives its false regression again: exit 1
    monkeypatch.setattr(probespeed, "adjust", lambda b, h: (b, h, ((), ())))
    (earlier,) = judge_replay.replay(path, GateConfig())
    assert earlier.outcome == "regression" and "host input +" in earlier.reason, earlier
    assert cli.main(["replay", str(path), "--config", str(tmp_path / "none.toml")]) == 1
    assert capsys.readouterr().out.strip().endswith("regression: 1")


def test_fewer_processes_than_the_judge_needs_stay_open(tmp_path: Path) -> None:
    path = records(tmp_path / "kg-aa-2", replays(GRAPH_BASE, 0)[:2], replays(GRAPH_HEAD, 10)[:2])
    (found,) = judge_replay.replay(path, GateConfig())
    assert (found.outcome, found.processes) == ("open", 2)


def test_a_file_that_is_no_records_file_is_an_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "samehost.json"
    other.write_text("{}")
    assert cli.main(["replay", str(other)]) == 2
    err = capsys.readouterr().err
    assert "not a same-host judge's records file" in err and "samehost-records.json.xz" in err
    assert "Traceback" not in err


# yolov8n fp16's records of two A/A runs of `pytest benchmarks` on a machine of 4 H200s, a job on
# each GPU at once (2026-11-27, fifteenth session; hosts 08471589 and c8752ab5): both failed, the
# latency and the input copy over their limits only once divided by each step's CPU-speed loop
FLEET = Path(__file__).parent / "data" / "h200-fleet-host-coupled.json.xz"


def test_the_fleets_two_false_regressions_are_not_failed_by_the_loop_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = judge_replay.replay(FLEET, GateConfig())
    # as measured the head ran faster (-15.4 % after 3 processes a side; -13.6 % after the 4 that the
    # run had): a pass with both numbers; the input copy +40 % as measured (limit 50 %): the live judge
    # would have measured another round
    assert [(f.outcome, f.processes) for f in found] == [("pass", 3), ("open", 3)], found
    assert (
        "wall -15.4 % as measured, +17.6 % at each step's CPU speed: over its limit only" in found[0].reason
    )
    # the rule of the tree that ran them (the loop alone decides): their two false regressions again
    monkeypatch.setattr(probespeed, "measured_too", lambda ab, _: ab)
    again = judge_replay.replay(FLEET, GateConfig())
    assert [f.outcome for f in again] == ["regression", "regression"], again
    assert "wall +16.6 %" in again[0].reason and "host input +50.1 %" in again[1].reason, again
