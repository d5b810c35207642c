"""End to end on the CPU with a tiny YOLO: no baseline -> record -> pass -> slowed layer fails.

Each step is a fresh pytest process, as in CI. CPU op times on a shared machine are noisy, so the
thresholds here are wide (100 %, 300 µs floor for layers and for kernels: on the 2-core CI machine
an 8.8 µs ``aten::chunk`` once measured 18.5 µs in two fresh processes in a row) and the
deliberate slowdown is large (model.2 run 9 times instead of once); the pass steps must still pass
and the slowed step must name model.2.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("ultralytics")

PYPROJECT = """
[tool.kernelgate]
layer_threshold = "100%"
kernel_threshold = "100%"
total_threshold = "100%"
floor_us = 300.0
kernel_floor_us = 300.0
"""

SUITE = """
def test_yolo(kernelgate):
    result = kernelgate.yolo(model="yolov8n", precision="fp32", batch=1, imgsz=64)
    m = result.measurement
    assert sum(sum(lay.time.samples) for lay in m.layers) == pytest.approx(sum(m.total.samples), rel=1e-9)
"""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--kernelgate-device=cpu", "--benchmark-min-rounds=3", *args
    )


@pytest.mark.slow
def test_record_pass_and_catch_a_slowed_layer(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(PYPROJECT)
    pytester.makepyfile(test_suite="import pytest\n" + SUITE)

    first = run(pytester)
    first.assert_outcomes(failed=1)
    first.stdout.fnmatch_lines(
        [
            "*no baseline for 'yolov8n-fp32-bs1-64' on cpu-*: pytest test_suite.py::test_yolo --kernelgate-save*",  # noqa: E501
            "no baseline: yolov8n-fp32-bs1-64",
            "record it with: pytest test_suite.py::test_yolo --kernelgate-save",
        ]
    )

    record = run(pytester, "--kernelgate-save")
    record.assert_outcomes(passed=1)
    files = list(Path(pytester.path, "baselines").glob("cpu-*/0001_kernelgate.json"))
    assert len(files) == 1
    saved = json.loads(files[0].read_text())
    assert saved["kernelgate"]["schema_version"] == 2
    (bench,) = saved["benchmarks"]
    layers = [lay["name"] for lay in bench["extra_info"]["kernelgate"]["layers"]]
    assert layers[:3] == ["input", "model.0", "model.1"] and "model.22" in layers
    assert bench["stats"]["rounds"] >= 3

    again = run(pytester)
    again.assert_outcomes(passed=1)

    # the screen alone: tests/test_samehost_e2e.py covers the same-host judge
    slowed = run(pytester, "--kernelgate-slow-layer=model.2:8", "--kernelgate-no-confirm")
    slowed.assert_outcomes(failed=1)
    slowed.stdout.fnmatch_lines(["*REGRESSED model.2 C2f:*threshold 100 %, floor 300 µs*"])
    assert "REGRESSED model.3 " not in slowed.stdout.str()

    compat = run(pytester, "--benchmark-compare")
    compat.assert_outcomes(passed=1)
    compat.stdout.fnmatch_lines(["*test_yolo (0001_kernelg)*"])  # rows are sorted by speed:
    compat.stdout.fnmatch_lines(["*test_yolo (NOW)*"])  # match each on its own
