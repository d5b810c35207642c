"""Every axis of the matrix that runs on a CPU, end to end on tiny models: record, then compare.

Precisions fp32/bf16/autocast-bf16, batch, channels_last, fused Conv+BN, torch.compile, the
pipeline stages (letterbox + NMS on ultralytics' bus.jpg), a YOLO26 end-to-end head, a custom yaml
and a ``module:factory`` model; CUDA-graph mode is skipped with its reason. torch.compile compiles
the ``module:factory`` model: yolov8n's Inductor build took 65 s of this test's 103 s with an empty
Inductor cache (2-core CPU machine, 2026-11-26). YOLO models under torch.compile are measured in the
GPU matrix's full set (its 3-round baselines of 2026-11-26 hold four such configurations).

This checks that each configuration runs, is attributed, saved and compared, not CPU timing: no
threshold here can be reached (with 300 % and a 5 ms floor, yolo26n's Detect once went 3.8 -> 15.3
ms between the two processes, beside the other pytest-xdist worker on the 2-core CI machine).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernelgate.baseline import store as baseline

pytest.importorskip("ultralytics")

PYPROJECT = """
[tool.kernelgate]
layer_threshold = "100000%"
kernel_threshold = "100000%"
total_threshold = "100000%"
floor_us = 10000000.0
kernel_floor_us = 10000000.0
confirm = false

[tool.kernelgate.matrix]
on_cpu = "axes"

[[tool.kernelgate.matrix.axes]]
models = ["yolov8n"]
precisions = ["fp32", "bf16", "amp-bf16"]
imgsz = [64]

[[tool.kernelgate.matrix.axes]]
models = ["yolo11n"]
precisions = ["fp32"]
imgsz = [64]
batches = [2]
channels_last = [true]
fuse = [true]

[[tool.kernelgate.matrix.axes]]
models = ["yolov8n", "yolo26n"]
precisions = ["fp32"]
imgsz = [64]
stages = ["pipeline"]

[[tool.kernelgate.matrix.axes]]
models = ["yolov8n"]
precisions = ["fp32"]
imgsz = [64]
modes = ["graph"]

[[tool.kernelgate.matrix.axes]]
models = ["tinynet:build"]
precisions = ["fp32"]
imgsz = [64]
modes = ["compile"]

[[tool.kernelgate.matrix.axes]]
models = ["custom/yolov8n-custom.yaml", "tinynet:build"]
precisions = ["fp32"]
imgsz = [64]
"""

TINYNET = """
import torch


def build():
    return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Conv2d(8, 4, 3))
"""

SUITE = """
def test_yolo(kernelgate, kernelgate_case):
    result = kernelgate.run(kernelgate_case)
    assert result.measurement.total.median > 0
"""

EXPECTED = {
    "yolov8n-fp32-bs1-64",
    "yolov8n-bf16-bs1-64",
    "yolov8n-amp-bf16-bs1-64",
    "yolo11n-fp32-bs2-64-cl-fused",
    "yolov8n-fp32-bs1-64-pipeline",
    "yolo26n-fp32-bs1-64-pipeline",
    "build-fp32-bs1-64-compile",
    "yolov8n-custom-fp32-bs1-64",
    "build-fp32-bs1-64",
}


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--kernelgate-device=cpu", "--benchmark-min-rounds=3",
        "--kernelgate-iterations=2", "-rs", *args,
    )  # fmt: skip


@pytest.mark.slow
def test_each_cpu_axis_records_and_compares(pytester: pytest.Pytester) -> None:
    import ultralytics

    pytester.makepyprojecttoml(PYPROJECT)
    pytester.makepyfile(test_suite=SUITE, tinynet=TINYNET)
    custom = Path(pytester.path, "custom")
    custom.mkdir()
    yaml = Path(ultralytics.__file__).parent / "cfg" / "models" / "v8" / "yolov8.yaml"
    shutil.copy(yaml, custom / "yolov8n-custom.yaml")

    record = run(pytester, "--kernelgate-save")
    record.assert_outcomes(passed=len(EXPECTED), skipped=1)
    record.stdout.fnmatch_lines(["*yolov8n-fp32-bs1-64-graph: CUDA-graph mode needs a CUDA GPU*"])
    (path,) = Path(pytester.path, "baselines").glob("cpu-*/0001_kernelgate.json")
    saved = {
        b["extra_info"]["kernelgate"]["benchmark"]: b for b in baseline.read_document(path)["benchmarks"]
    }
    assert set(saved) == EXPECTED

    def layers(bench: str) -> dict[str, float]:
        found = saved[bench]["extra_info"]["kernelgate"]["layers"]
        return {lay["name"]: lay["time_us"]["median"] for lay in found}

    pipe = layers("yolov8n-fp32-bs1-64-pipeline")
    assert pipe["preprocess"] > 0 and pipe["postprocess"] > 0 and "model.22" in pipe

    # YOLO26's one-to-one head needs no NMS, YOLOv8's postprocess runs it
    def ops(bench: str, layer: str) -> set[str]:
        return {k["name"] for k in saved[bench]["extra_info"]["kernelgate"]["kernels"] if k["layer"] == layer}

    assert "torchvision::nms" in ops("yolov8n-fp32-bs1-64-pipeline", "postprocess")
    assert "torchvision::nms" not in ops("yolo26n-fp32-bs1-64-pipeline", "postprocess")
    assert layers("yolo26n-fp32-bs1-64-pipeline")["postprocess"] > 0
    assert set(layers("build-fp32-bs1-64-compile")) == {"input", "compiled"}
    assert set(layers("build-fp32-bs1-64")) == {"input", "0", "1", "2"}
    assert "model.22" in layers("yolov8n-custom-fp32-bs1-64")
    kernels = {k["name"] for k in saved["yolov8n-bf16-bs1-64"]["extra_info"]["kernelgate"]["kernels"]}
    assert "aten::conv2d" in kernels
    params = saved["yolo11n-fp32-bs2-64-cl-fused"]["params"]["kernelgate_case"]
    assert params["channels_last"] is True and params["fuse"] is True and params["batch"] == 2

    # --kernelgate-only narrows the set at collection: nothing needs measuring to see which remain
    # (nor a process of its own: collecting builds no model)
    chosen = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "--kernelgate-device=cpu", "--collect-only", "-q",
        "--kernelgate-only", "mode=eager", "--kernelgate-only", "stage=pipeline",
    )  # fmt: skip
    assert chosen.ret == 0
    assert sorted(line for line in chosen.stdout.lines if line.startswith("test_suite.py::")) == [
        "test_suite.py::test_yolo[yolo26n-fp32-bs1-64-pipeline]",
        "test_suite.py::test_yolo[yolov8n-fp32-bs1-64-pipeline]",
    ]
    compared = run(pytester, "-q")
    compared.assert_outcomes(passed=len(EXPECTED), skipped=1)
    compared.stdout.fnmatch_lines([f"kernelgate: {len(EXPECTED)} benchmark(s) compared, none failed"])
