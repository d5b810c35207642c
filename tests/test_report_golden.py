"""Golden output of the reports, fed by real H200 results checked in under tests/data/.

The baseline is yolov8n fp16 from the committed H200 baseline; the current run is the same
benchmark measured in another process with ``--kernelgate-slow-layer model.2`` (2026-11-21).
Regenerate after an intended change with ``KERNELGATE_UPDATE_GOLDEN=1 pytest tests/test_report_golden.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kernelgate.baseline import store as baseline
from kernelgate.config import GateConfig, Scope
from kernelgate.machine import envdiff
from kernelgate.report import terminal as report
from kernelgate.verdict.compare import Comparison, Verdict, compare

DATA = Path(__file__).parent / "data"
GOLDEN = DATA / "golden"


def check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("KERNELGATE_UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def load(name: str) -> baseline.Entry:
    (entry,) = baseline.load(DATA / name).values()
    return entry


@pytest.fixture(scope="module")
def slowed() -> tuple[Comparison, dict[str, str]]:
    base, cur = load("h200-yolov8n-fp16-baseline.json"), load("h200-yolov8n-fp16-model2-slowed.json")
    comparison = compare(base.measurement, cur.measurement, GateConfig())
    return comparison, {lay.name: lay.type for lay in cur.measurement.layers}


def test_the_real_regression_is_model_2_only(slowed: tuple[Comparison, dict[str, str]]) -> None:
    comparison, _ = slowed
    regressed = [d.name for d in comparison.of(Scope.LAYER, Verdict.REGRESSED)]
    assert regressed == ["model.2"]
    assert {d.layer for d in comparison.of(Scope.KERNEL, Verdict.REGRESSED)} == {"model.2"}
    assert comparison.failed


def test_failure_message_golden(slowed: tuple[Comparison, dict[str, str]]) -> None:
    comparison, types = slowed
    TARGET = "benchmarks/test_yolo.py::test_yolo[yolov8n-fp16-bs1-640]"
    text = report.failure_message(
        comparison, types, "baselines/sm90-nvidia-h200/0001_kernelgate.json", target=TARGET
    )
    check("failure_message.txt", text + "\n")


def test_terminal_summary_golden(slowed: tuple[Comparison, dict[str, str]]) -> None:
    comparison, _ = slowed
    current = load("h200-yolov8n-fp16-model2-slowed.json").measurement
    text = report.summary_table([comparison], measurements={current.benchmark: current})
    check("terminal_summary.txt", text)
    assert report.summary_table([comparison]) == text.split("where the time goes")[0]


def test_layer_table_golden(slowed: tuple[Comparison, dict[str, str]]) -> None:
    comparison, types = slowed
    check("layer_table.txt", report.layer_table(comparison, types))


def test_a_passing_run_summarises_the_total() -> None:
    base = load("h200-yolov8n-fp16-baseline.json")
    comparison = compare(base.measurement, base.measurement, GateConfig())
    assert not comparison.failed
    measured = {base.measurement.benchmark: base.measurement, "not-compared": base.measurement}
    check("terminal_summary_pass.txt", report.summary_table([comparison], measurements=measured))


def test_environment_changes_are_shown_next_to_the_regression(
    slowed: tuple[Comparison, dict[str, str]],
) -> None:
    comparison, types = slowed
    base = load("h200-yolov8n-fp16-baseline.json").measurement.environment
    current = dict(base, torch="2.12.0+cu130", cudnn="92000", temperature_c="61")
    current["env.CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
    found = envdiff.changes(base, current)
    text = report.failure_message(comparison, types, "baselines/x.json", found, target="t.py::t")
    lines = text.splitlines()
    assert lines[-3] == (
        "  environment changed since the baseline (may explain it): cudnn 91900 -> 92000; "
        "torch 2.11.0+cu130 -> 2.12.0+cu130; CUBLAS_WORKSPACE_CONFIG (unset) -> :4096:8"
    )
    assert lines[-2] == "  baseline: baselines/x.json"
    unchanged = report.failure_message(comparison, types, "baselines/x.json", target="t.py::t")
    assert unchanged == "\n".join(lines[:-3] + lines[-2:])
