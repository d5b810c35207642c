"""Reading a Kineto Chrome trace: GPU activities linked to their launch, ranges, steps, CPU ops."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from factories import CPU_TID, cpu_op, gpu, launched, module_range, runtime, step

from kernelgate.measure import trace
from kernelgate.measure.trace import Activity, Launch, Range


def test_parse_gpu_links_each_kernel_to_its_launch_call() -> None:
    events = [
        *launched("gemm_a", 11, launch_ts=10.0, start=15.0, dur=4.0),
        *launched("gemm_b", 12, launch_ts=20.0, start=25.0, dur=6.0, tid=202),
    ]
    parsed = trace.parse_gpu(events)
    assert parsed.unlinked == 0
    assert parsed.activities == (
        Activity("gemm_a", "kernel", 15.0, 4.0, launch_tid=CPU_TID, launch_ts=10.0),
        Activity("gemm_b", "kernel", 25.0, 6.0, launch_tid=202, launch_ts=20.0),
    )


def test_parse_gpu_links_through_driver_calls_too() -> None:
    driver = runtime(5, ts=3.0, name="cuLaunchKernel") | {"cat": "cuda_driver"}
    parsed = trace.parse_gpu([driver, gpu("k", 5, ts=4.0, dur=1.0)])
    assert parsed.unlinked == 0
    assert parsed.activities[0].launch_ts == 3.0


def test_parse_gpu_counts_kernels_without_a_launch_event_as_unlinked() -> None:
    no_launch = gpu("orphan", 99, ts=30.0, dur=2.0)
    no_correlation = gpu("bare", 0, ts=40.0, dur=1.0)
    del no_correlation["args"]["correlation"]
    events = [*launched("linked", 1, 1.0, 2.0, 3.0), no_launch, no_correlation]
    parsed = trace.parse_gpu(events)
    assert parsed.unlinked == 2
    assert [(a.name, a.launch_tid, a.launch_ts) for a in parsed.activities] == [
        ("linked", CPU_TID, 1.0),
        ("orphan", None, None),
        ("bare", None, None),
    ]


def test_parse_gpu_keeps_kernels_memcpy_and_memset_only() -> None:
    events = [
        *launched("k", 1, 1.0, 2.0, 1.0),
        *launched("Memcpy HtoD (Pageable -> Device)", 2, 3.0, 4.0, 5.0, cat="gpu_memcpy"),
        *launched("Memset (Device)", 3, 9.0, 10.0, 0.5, cat="gpu_memset"),
        {"ph": "X", "cat": "cpu_op", "name": "aten::conv2d", "tid": CPU_TID, "ts": 0.5, "dur": 3.0},
        {"ph": "X", "cat": "gpu_user_annotation", "name": "kg/model.0", "tid": 7, "ts": 2.0, "dur": 1.0},
        {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 1, "tid": 7, "ts": 2.0},
        {"ph": "i", "cat": "kernel", "name": "instant", "tid": 7, "ts": 2.0, "args": {"correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": "no-duration", "tid": 7, "ts": 2.0, "args": {"correlation": 1}},
        {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "python"}},
    ]
    parsed = trace.parse_gpu(events)
    assert [(a.name, a.kind) for a in parsed.activities] == [
        ("k", "kernel"),
        ("Memcpy HtoD (Pageable -> Device)", "memcpy"),
        ("Memset (Device)", "memset"),
    ]


def test_parse_gpu_reads_launch_facts() -> None:
    facts = {
        "grid": [80, 2, 1],
        "block": [128, 1, 1],
        "registers": 72,
        "shared_memory": 16384,
        "occupancy": 37.5,
    }
    events = [
        *launched("gemm", 1, 1.0, 2.0, 3.0, **facts),
        *launched("Memcpy HtoD", 2, 3.0, 4.0, 1.0, cat="gpu_memcpy"),
    ]
    kernel, memcpy = trace.parse_gpu(events).activities
    assert kernel.launch == Launch(
        grid=(80, 2, 1), block=(128, 1, 1), registers=72, shared_memory=16384, occupancy_pct=37.5
    )
    assert memcpy.launch is None


def test_parse_gpu_launch_facts_default_when_cupti_left_some_out() -> None:
    (kernel,) = trace.parse_gpu([gpu("k", 1, 1.0, 1.0, grid=[1, 1, 1])]).activities
    assert kernel.launch == Launch(grid=(1, 1, 1), block=(), registers=0, shared_memory=0, occupancy_pct=0.0)


def test_ranges_and_steps() -> None:
    events = [
        step(7, 0.0, 100.0),
        module_range("model.0", 1.0, 40.0),
        module_range("model.0.conv", 2.0, 30.0, tid=202),
        {"ph": "X", "cat": "user_annotation", "name": "other/range", "tid": CPU_TID, "ts": 1.0, "dur": 5.0},
        {"ph": "X", "cat": "gpu_user_annotation", "name": "kg/model.0", "tid": 7, "ts": 3.0, "dur": 5.0},
        {"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#7", "tid": 7, "ts": 3.0, "dur": 90.0},
    ]
    for parsed in (trace.parse_gpu(events), trace.parse_cpu(events)):
        assert parsed.steps == (Range("ProfilerStep#7", CPU_TID, 0.0, 100.0),)
        assert parsed.ranges == (
            Range("model.0", CPU_TID, 1.0, 40.0),
            Range("model.0.conv", 202, 2.0, 30.0),
        )


def test_parse_cpu_keeps_only_the_outermost_op_of_each_thread() -> None:
    events = [
        cpu_op("aten::conv2d", 10.0, 20.0),
        cpu_op("aten::convolution", 11.0, 18.0),  # inside conv2d
        cpu_op("aten::_convolution", 12.0, 10.0),  # deeper
        cpu_op("aten::add", 30.0, 5.0),  # starts as conv2d ends: a sibling
        cpu_op("aten::relu", 31.0, 9.0),  # inside add, even though it outlasts it
        cpu_op("aten::silu", 12.0, 4.0, tid=202),  # another thread: its own outermost op
        cpu_op("aten::empty", 5.0, 1.0),
        *launched("k", 1, 13.0, 14.0, 1.0),  # GPU work is not an activity in CPU mode
    ]
    parsed = trace.parse_cpu(events)
    assert parsed.unlinked == 0
    assert parsed.activities == (
        Activity("aten::empty", "cpu_op", 5.0, 1.0, CPU_TID, 5.0),
        Activity("aten::conv2d", "cpu_op", 10.0, 20.0, CPU_TID, 10.0),
        Activity("aten::add", "cpu_op", 30.0, 5.0, CPU_TID, 30.0),
        Activity("aten::silu", "cpu_op", 12.0, 4.0, 202, 12.0),
    )


def test_parse_cpu_prefers_the_longer_of_two_ops_starting_together() -> None:
    events = [cpu_op("inner", 10.0, 2.0), cpu_op("outer", 10.0, 8.0)]
    assert [a.name for a in trace.parse_cpu(events).activities] == ["outer"]


@pytest.mark.parametrize("wrapped", [True, False])
@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_load_events_and_parse_from_a_file(tmp_path: Path, suffix: str, wrapped: bool) -> None:
    events = [step(1, 0.0, 50.0), *launched("k", 1, 1.0, 2.0, 3.0)]
    text = json.dumps({"schemaVersion": 1, "traceEvents": events} if wrapped else events)
    path = tmp_path / f"trace{suffix}"
    if suffix.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text, encoding="utf-8")
    assert trace.load_events(path) == events
    parsed = trace.parse(path, gpu=True)
    assert [a.name for a in parsed.activities] == ["k"]
    assert trace.parse(path, gpu=False).activities == ()


def test_load_events_refuses_a_file_that_is_not_a_trace(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"deviceProperties": []}', encoding="utf-8")
    with pytest.raises(ValueError, match="not a Chrome trace"):
        trace.load_events(path)
