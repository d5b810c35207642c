"""The cold-start gate end to end on the CPU: record a baseline, then catch a slowed phase.

Each step is a pytest run of its own (in this process), and every cold-start run is a fresh child
process. The fault is kernelgate's own (``KERNELGATE_SLOW_PHASE``: the child sleeps inside that
phase); the thresholds are wide because imports on a shared 2-core CI machine are noisy.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("ultralytics")

PYPROJECT = """
[tool.kernelgate]
coldstart_threshold = "100%"
coldstart_floor_ms = 2500.0
"""

SUITE = """
def test_coldstart(kernelgate):
    record = kernelgate.coldstart(
        model="yolov8n", precision="fp32", imgsz=32, scenario="empty", runs=1, prime=False
    )
    assert record.ok_runs
"""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:cacheprovider", "--kernelgate-device=cpu", *args)


@pytest.mark.slow
def test_record_then_catch_a_slowed_cold_start_phase(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KERNELGATE_SLOW_PHASE", raising=False)
    pytester.makepyprojecttoml(PYPROJECT)
    pytester.makepyfile(test_suite=SUITE)

    saved = run(pytester, "--kernelgate-save")
    saved.assert_outcomes(passed=1)
    assert "no trace kept" not in saved.stdout.str()  # a cold start has no trace: nothing to say
    (path,) = Path(pytester.path, "baselines").glob("cpu-*/0001_kernelgate.json")
    (bench,) = json.loads(path.read_text())["benchmarks"]
    record = bench["extra_info"]["kernelgate_coldstart"]
    assert record["benchmark"] == "coldstart-yolov8n-fp32-bs1-32-empty"
    assert set(record["median_ms"]) >= {"import_torch", "import_model", "build", "first_inference"}
    assert bench["extra_info"]["kernelgate"]["environment"]["torch"]  # the environment rides along
    assert bench["stats"]["rounds"] == 1  # pytest-benchmark timed the child process

    monkeypatch.setenv("KERNELGATE_SLOW_PHASE", "import_model:3.5")
    slowed = run(pytester, "--kernelgate-no-confirm")  # the screen alone (the judge: test_samehost_e2e)
    slowed.assert_outcomes(failed=1)
    slowed.stdout.fnmatch_lines(
        [
            "*kernelgate: cold start coldstart-yolov8n-fp32-bs1-32-empty on cpu-*: 1 phase(s)*over threshold",
            "*REGRESSED import_model (import ultralytics' DetectionModel): * -> *100 %, floor 2.5 s)",
            "*environment changed since the baseline*: KERNELGATE_SLOW_PHASE (unset) -> import_model:3.5",
            "*re-record: pytest test_suite.py::test_coldstart --kernelgate-save",
        ]
    )
    assert "REGRESSED import_torch" not in slowed.stdout.str()
    assert "could not be written" not in slowed.stdout.str()  # the kernel report skips cold starts
