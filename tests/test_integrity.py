"""Profiles that lost events, and records that do not add up, are marked unreliable.

The synthetic traces below have the shape of a torch.profiler trace of an eager forward: every
iteration launches the same kernels. The faults are the ones Kineto/CUPTI produce: kernel records of
the first iteration dropped as "Out-of-range" while their launch calls stay (pytorch/pytorch#192021),
launch records lost, a ProfilerStep range missing, nothing recorded at all.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from factories import launched, measurement, module_range, step

from kernelgate.measure import attribute, integrity, trace
from kernelgate.measure.aggregate import build
from kernelgate.measure.integrity import UnreliableProfileWarning, check_profile, check_record
from kernelgate.measure.results import Dist, Measurement
from kernelgate.models.layers import Layers

LAYERS = Layers({"model.0": "Conv", "model.1": "C2f"})
ITERATIONS = 4
GEMM = "void sm90_xmma_gemm_f16f16(int)"
BN = "void batch_norm_transform_input_kernel<__half>(int)"


def forward(i: int) -> list[dict[str, Any]]:
    """Iteration ``i``: model.0 launches a gemm and a batch norm, model.1 two gemms."""
    t0 = 1000.0 * i
    corr = 100 * (i + 1)
    return [
        step(i, t0, t0 + 900.0),
        module_range("model.0", t0 + 10, t0 + 300),
        module_range("model.0.conv", t0 + 20, t0 + 100),
        *launched(GEMM, corr, t0 + 30, t0 + 40, 50.0),
        module_range("model.0.bn", t0 + 150, t0 + 250),
        *launched(BN, corr + 1, t0 + 160, t0 + 170, 10.0),
        module_range("model.1", t0 + 400, t0 + 800),
        module_range("model.1.cv1", t0 + 410, t0 + 600),
        *launched(GEMM, corr + 2, t0 + 420, t0 + 430, 40.0),
        *launched(GEMM, corr + 3, t0 + 500, t0 + 510, 41.0),
    ]


def events(iterations: int = ITERATIONS) -> list[dict[str, Any]]:
    return [e for i in range(iterations) for e in forward(i)]


def checked(evts: list[dict[str, Any]], expected: int = ITERATIONS) -> list[str]:
    parsed = trace.parse_gpu(evts)
    return check_profile(parsed, attribute.attribute(parsed, LAYERS), expected, gpu=True)


def is_kernel_of_iteration(e: dict[str, Any], i: int) -> bool:
    return e.get("cat") == "kernel" and 1000.0 * i <= e["ts"] < 1000.0 * (i + 1)


def test_a_consistent_profile_is_reliable() -> None:
    assert checked(events()) == []


def test_kernel_records_dropped_at_session_start_are_detected() -> None:
    """The Kineto "Out-of-range" loss: the first iteration's kernels vanish, their launches stay."""
    dropped = [e for e in events() if not is_kernel_of_iteration(e, 0)]
    reasons = checked(dropped)
    assert reasons == [
        "kernels per iteration differ (iteration 0: 0; the other 3: 4): the profiler dropped events",
        "4 kernel launches in iteration(s) 0 have no kernel record "
        "(dropped by the profiler, e.g. kineto's 'Out-of-range' records)",
    ]


def test_a_single_lost_kernel_record_is_detected() -> None:
    lost = [e for e in events() if not (is_kernel_of_iteration(e, 2) and e["name"] == BN)]
    reasons = checked(lost)
    assert reasons[0].startswith("kernels per iteration differ (iteration 2: 3; the other 3: 4)")
    assert reasons[1].startswith("1 kernel launches in iteration(s) 2 have no kernel record")


def test_kernels_swapped_between_iterations_are_detected_even_when_counts_agree() -> None:
    """Iteration 1 lost a batch norm and shows an extra gemm: the total count still matches."""
    evts = events()
    swapped = []
    for e in evts:
        if is_kernel_of_iteration(e, 1) and e["name"] == BN:
            e = {**e, "name": GEMM}
        swapped.append(e)
    (reason,) = checked(swapped)
    assert reason.startswith("2 kernels ran a different number of times per iteration (e.g. model.0.bn :: ")
    assert ": 1, 0, 1, 1 ...): the profiler dropped events" in reason


def test_lost_launch_records_are_detected() -> None:
    lost = [e for e in events() if not (e.get("cat") == "cuda_runtime" and e["args"]["correlation"] == 302)]
    reasons = checked(lost)
    assert reasons[0].startswith(
        "2 kernels ran a different number of times per iteration (e.g. (unattributed)"
    )
    assert reasons[1:] == ["1 device activities have no launch record (the profiler lost their launch call)"]


def test_a_missing_profiler_step_is_detected() -> None:
    no_step = [e for e in events() if e.get("name") != "ProfilerStep#3"]
    reasons = checked(no_step)
    assert reasons[0] == "the trace has 3 profiled iterations (ProfilerStep ranges), 4 were run"


def test_a_profile_without_any_kernel_is_detected() -> None:
    """CUPTI not permitted: the CPU side is recorded, the GPU side is empty, and nothing raises."""
    empty = [e for e in events() if e.get("cat") != "kernel"]
    reasons = checked(empty)
    assert reasons[0] == (
        "the profiler recorded no kernels in any of the 4 iterations "
        "(CUPTI unavailable or not permitted? see docs/faults.md)"
    )


def test_a_trace_without_steps_is_detected() -> None:
    assert checked([e for e in events() if not str(e.get("name", "")).startswith("ProfilerStep")]) == [
        "the trace has 0 profiled iterations (ProfilerStep ranges), 4 were run"
    ]


def test_cpu_mode_uses_the_words_of_cpu_ops() -> None:
    frame = pd.DataFrame(columns=attribute.COLUMNS)
    parsed = trace.ParsedTrace((), (), (trace.Range("ProfilerStep#0", 1, 0.0, 10.0),), 0)
    assert check_profile(parsed, frame, 1, gpu=False) == [
        "the profiler recorded no CPU ops in any of the 1 iterations"
    ]


def test_many_odd_iterations_are_summarised() -> None:
    dropped = [e for e in events(8) if not any(is_kernel_of_iteration(e, i) for i in range(6))]
    reason = checked(dropped, expected=8)[0]
    assert reason.startswith(
        "kernels per iteration differ (iteration 0: 0, iteration 1: 0, iteration 2: 0, iteration 3: 0 "
        "and 2 more; the other 2: 4)"
    )


# --- check_record ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def record() -> Measurement:
    frame = attribute.attribute(trace.parse_gpu(events()), LAYERS)
    return build(
        frame, benchmark="b", arch="a", device="cuda", iterations=ITERATIONS, wall_us=[], environment={}
    )


def test_a_built_record_holds_together_before_and_after_json(record: Measurement) -> None:
    assert check_record(record) == []
    assert check_record(Measurement.from_json(json.loads(json.dumps(record.to_json())))) == []


def test_a_layer_edited_by_hand_does_not_add_up(record: Measurement) -> None:
    layer = record.layers[1]
    edited = replace(layer, time=Dist((layer.time.samples[0] - 20.0, *layer.time.samples[1:])))
    reasons = check_record(replace(record, layers=(record.layers[0], edited)))
    assert reasons == ["iteration 0: the layers add up to 121.000 µs, the total is 141.000 µs"]


def test_a_kernel_dropped_from_the_record_does_not_add_up(record: Measurement) -> None:
    reasons = check_record(replace(record, kernels=record.kernels[1:]))
    assert reasons[0] == "iteration 0: the kernels add up to 91.000 µs, the total is 141.000 µs"
    assert len(reasons) == integrity.SHOWN  # one per iteration, at most SHOWN


def test_wrong_sample_counts_are_named(record: Measurement) -> None:
    short = replace(record.layers[0], time=Dist(record.layers[0].time.samples[:3]))
    assert check_record(replace(record, layers=(short, record.layers[1]))) == [
        "layer model.0 has 3 samples for 4 iterations"
    ]


def test_busy_above_total_is_impossible(record: Measurement) -> None:
    busy = Dist(tuple(t + 5.0 for t in record.total.samples))
    assert check_record(replace(record, busy=busy))[0] == (
        "iteration 0: busy 146.000 µs exceeds the total 141.000 µs"
    )


def test_a_record_without_iterations() -> None:
    assert check_record(replace(measurement(), iterations=0)) == ["0 iterations"]


# --- measure_reliably --------------------------------------------------------------------------


def attempts(*reasons: tuple[str, ...]) -> tuple[list[int], Any]:
    calls: list[int] = []
    good = measurement({"model.0": 100.0})

    def attempt() -> Measurement:
        calls.append(1)
        return replace(good, unreliable_reasons=reasons[len(calls) - 1])

    return calls, attempt


def test_a_reliable_first_profile_is_kept() -> None:
    calls, attempt = attempts(())
    assert integrity.measure_reliably(attempt, "b").reliable
    assert len(calls) == 1


def test_an_unreliable_profile_is_measured_again_and_the_good_one_kept_with_a_warning() -> None:
    calls, attempt = attempts(("kernels per iteration differ",), ())
    with pytest.warns(UnreliableProfileWarning, match=r"first profile of 'b' was unreliable \(kernels per"):
        result = integrity.measure_reliably(attempt, "b")
    assert result.reliable
    assert len(calls) == 2


def test_twice_unreliable_stays_unreliable_with_every_reason() -> None:
    calls, attempt = attempts(("first",), ("second",))
    result = integrity.measure_reliably(attempt, "b")
    assert not result.reliable
    assert result.unreliable_reasons == ("second", "measured twice, unreliable both times")
    assert len(calls) == 2
    assert result.to_json()["reliable"] is False
    assert Measurement.from_json(result.to_json()).unreliable_reasons == result.unreliable_reasons


# --- a real H200 trace (yolov8n fp16, 2 profiled steps, 450 kernels each) ---------------------------

REAL_TRACE = Path(__file__).parent / "data" / "yolov8n-fp16-h200-2steps.trace.json.gz"
YOLO = Layers({f"model.{i}": "" for i in range(23)})


@pytest.fixture(scope="module")
def real_events() -> list[dict[str, Any]]:
    return trace.load_events(REAL_TRACE)


def real_reasons(evts: list[dict[str, Any]]) -> list[str]:
    parsed = trace.parse_gpu(evts)
    frame = attribute.attribute(parsed, YOLO)
    m = build(frame, benchmark="b", arch="a", device="cuda", iterations=2, wall_us=[], environment={})
    return check_profile(parsed, frame, 2, gpu=True) + check_record(m)


def test_a_real_h200_profile_is_reliable(real_events: list[dict[str, Any]]) -> None:
    assert real_reasons(real_events) == []


def test_a_real_h200_profile_that_lost_its_first_steps_kernels_is_not(
    real_events: list[dict[str, Any]],
) -> None:
    """What pytorch/pytorch#192021 describes, applied to a real trace: step 0's kernel records go."""
    steps = sorted(
        (e for e in real_events if str(e.get("name", "")).startswith("ProfilerStep#")), key=lambda e: e["ts"]
    )
    second = steps[1]["ts"]
    dropped = [e for e in real_events if not (e.get("cat") in trace.GPU_CATEGORIES and e["ts"] < second)]
    assert len(dropped) < len(real_events)
    reasons = real_reasons(dropped)
    assert (
        reasons[0]
        == "kernels per iteration differ (iteration 0: 0; the other 1: 450): the profiler dropped events"
    )
    # 450 activities: 449 kernels and the input copy (a cudaMemcpyAsync, not a kernel launch)
    assert reasons[1].startswith("449 kernel launches in iteration(s) 0 have no kernel record")
