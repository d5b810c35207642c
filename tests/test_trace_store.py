"""Trace excerpts: one representative iteration, small, byte-stable, named as the gate names traces."""

from __future__ import annotations

from pathlib import Path

import pytest
from factories import launched, step
from real_data import DATA

from kernelgate.baseline import store as baseline
from kernelgate.baseline.names import safe_name
from kernelgate.measure import trace
from kernelgate.report import trace_store

TRACE = DATA / "yolov8n-fp16-h200-2steps.trace.json.gz"


def test_excerpt_of_the_real_trace_keeps_one_whole_iteration() -> None:
    doc = trace_store.load(TRACE)
    one = trace_store.excerpt(doc, totals_us=[1000.0, 1200.0])
    assert one["kernelgate"]["excerpt"].startswith("iteration 0 of 2 (ProfilerStep#")
    assert one["deviceProperties"] == doc["deviceProperties"]
    parsed = trace.parse_gpu(one["traceEvents"])
    assert len(parsed.steps) == 1
    assert len(parsed.activities) == len(trace.parse_gpu(doc["traceEvents"]).activities) // 2
    assert parsed.unlinked == 0


def test_excerpt_picks_the_iteration_closest_to_the_median() -> None:
    events: list[dict[str, object]] = [{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "gpu"}}]
    for i, start in enumerate((0.0, 100.0, 200.0)):
        events += [step(i, start, start + 90.0), *launched(f"k{i}", i, start + 1, start + 5, 10.0)]
    doc = {"traceEvents": events}
    picked = trace_store.excerpt(doc, totals_us=[10.0, 30.0, 20.0])
    assert picked["kernelgate"]["excerpt"] == "iteration 2 of 3 (ProfilerStep#2)"
    assert {e["name"] for e in picked["traceEvents"]} == {
        "process_name",
        "ProfilerStep#2",
        "cudaLaunchKernel",
        "k2",
    }
    assert trace_store.excerpt(doc)["kernelgate"]["excerpt"] == "iteration 1 of 3 (ProfilerStep#1)"


def test_store_writes_a_small_stable_gzip_and_honours_the_cap(tmp_path: Path) -> None:
    target = tmp_path / "baselines" / "sm90" / "traces" / f"bench{trace_store.SUFFIX}"
    assert trace_store.store(TRACE, target, [1.0, 2.0]) is None
    data = target.read_bytes()
    assert 0 < len(data) < 64 * 1024
    assert trace_store.store(TRACE, target, [1.0, 2.0]) is None and target.read_bytes() == data
    note = trace_store.store(TRACE, target, [1.0, 2.0], cap=1000)
    assert note is not None and "over the 1000-byte cap" in note and not target.exists()
    assert "missing" in (trace_store.store(tmp_path / "nope.json", target, []) or "")


def test_file_names_follow_the_gate() -> None:
    # the gate writes traces to out/traces/<safe_name(node name)>.json (gate.KernelGate.module)
    fullname = "benchmarks/test_yolo.py::test_yolo[yolov8n-fp16-bs1-640]"
    out = Path(".kernelgate")
    expected = out / "traces" / f"{safe_name('test_yolo[yolov8n-fp16-bs1-640]')}.json"
    assert trace_store.current_trace(out, fullname) == expected


def test_a_trace_without_profiler_steps_is_refused() -> None:
    with pytest.raises(ValueError, match="no ProfilerStep"):
        trace_store.excerpt({"traceEvents": [{"ph": "X", "name": "x", "ts": 1, "dur": 1}]})


def test_a_baseline_keeps_the_traces_of_the_default_set_and_of_its_own_tests() -> None:
    default_set, matrix = frozenset({"a-fp16", "b-fp16"}), frozenset({"a-fp16", "b-fp16", "a-bf16-compile"})
    chosen = trace_store.worth_keeping(
        ["a-fp16", "a-bf16-compile", "my-net-fp32", "b-fp16"], default_set, matrix
    )
    assert chosen == ["a-fp16", "my-net-fp32", "b-fp16"]
    assert trace_store.worth_keeping(["a-bf16-compile"], matrix, matrix) == ["a-bf16-compile"]


PLUGIN_SUITE = """
import torch
from kernelgate.models.layers import Layers


def test_matrix(kernelgate, kernelgate_case):
    kernelgate.run(kernelgate_case)


def test_own(kernelgate):
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU())
    kernelgate.module(net, torch.randn(1, 3, 16, 16), Layers({"0": "Conv2d", "1": "ReLU"}), name="own")
"""

PLUGIN_PYPROJECT = """
[tool.kernelgate.matrix]
on_cpu = "pr"

[[tool.kernelgate.matrix.pr]]
models = ["tinynet:build"]
precisions = ["fp32"]
imgsz = [32]

[[tool.kernelgate.matrix.nightly]]
models = ["tinynet:build"]
precisions = ["fp32"]
imgsz = [32, 48]
"""


def test_a_save_of_the_nightly_set_keeps_no_trace_of_what_pull_requests_do_not_gate(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyprojecttoml(PLUGIN_PYPROJECT)
    pytester.makepyfile(test_suite=PLUGIN_SUITE)
    pytester.makepyfile(tinynet="import torch\n\n\ndef build():\n    return torch.nn.Conv2d(3, 4, 3)\n")
    done = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--kernelgate-device=cpu", "--kernelgate-iterations=2",
        "--benchmark-min-rounds=2", "--kernelgate-save", "--kernelgate-matrix", "nightly",
    )  # fmt: skip
    done.assert_outcomes(passed=3)
    (folder,) = Path(pytester.path, "baselines").glob("cpu-*")
    saved = {e.measurement.benchmark for e in baseline.load(folder / baseline.FILE_NAME).values()}
    assert saved == {"build-fp32-bs1-32", "build-fp32-bs1-48", "own"}
    kept = sorted(p.name.removesuffix(trace_store.SUFFIX) for p in (folder / "traces").iterdir())
    assert kept == ["build-fp32-bs1-32", "own"]
