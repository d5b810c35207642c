"""Attributing kernels to iterations and modules, kernel name normalisation, busy time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from factories import gpu, launched, module_range, step

from kernelgate.measure import attribute, trace
from kernelgate.measure.attribute import UNATTRIBUTED
from kernelgate.models.layers import Layers

REAL_TRACE = Path(__file__).parent / "data" / "yolov8n-fp16-h200-2steps.trace.json.gz"
YOLO_LAYERS = Layers({f"model.{i}": "" for i in range(23)})
LAMBDA = (
    "at::native::gpu_kernel_impl<at::native::AddFunctor<float>>"
    "(at::TensorIteratorBase&, at::native::AddFunctor<float> const&)::{lambda(int)#1}"
)


def attributed(events: list[dict[str, Any]], layers: Layers = YOLO_LAYERS) -> pd.DataFrame:
    return attribute.attribute(trace.parse_gpu(events), layers)


def where(frame: pd.DataFrame) -> dict[str, tuple[int, str, str]]:
    """kernel -> (iteration, layer, module)."""
    return {
        str(r.kernel): (int(r.iteration), str(r.layer), str(r.module)) for r in frame.itertuples(index=False)
    }


# --- normalize_kernel_name -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("void foo<int>(float*, int)", "foo<int>"),
        (
            "void  cudnn::bn_fw_inf_1C11_kernel_NCHW<__half, float, true, 1>(float, float, cudnnTensor)",
            "cudnn::bn_fw_inf_1C11_kernel_NCHW<__half, float, true, 1>",
        ),
        ("void\n  gemm<\n 64,  128>(int)", "gemm< 64, 128>"),
        (
            "  sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize64x64x64_cublas  ",
            "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize64x64x64_cublas",
        ),
        # a lambda in the template arguments has a parameter list of its own: only the last one goes
        (
            f"void at::native::elementwise_kernel<128, 4, {LAMBDA}>(int, {LAMBDA})",
            f"at::native::elementwise_kernel<128, 4, {LAMBDA}>",
        ),
        (
            "void (anonymous namespace)::softmax_warp_forward<float, 8>(float*, int)",
            "(anonymous namespace)::softmax_warp_forward<float, 8>",
        ),
        ("Memcpy HtoD (Pageable -> Device)", "Memcpy HtoD"),
        ("Memset (Device)", "Memset"),
        ("triton_poi_fused_add_0", "triton_poi_fused_add"),
        ("triton_per_fused__native_batch_norm_legit_12", "triton_per_fused__native_batch_norm_legit"),
        ("triton_red_fused_sum", "triton_red_fused_sum"),
        ("cutlass_80_tensorop_s1688gemm_64x64_32x6", "cutlass_80_tensorop_s1688gemm_64x64_32x6"),
        ("kernel_3", "kernel_3"),  # only triton kernels carry a counter
    ],
)
def test_normalize_kernel_name(raw: str, normalized: str) -> None:
    assert attribute.normalize_kernel_name(raw) == normalized


def test_normalize_kernel_name_keeps_template_args_that_tell_kernels_apart() -> None:
    a = attribute.normalize_kernel_name("void gemm<64, 128>(float*)")
    b = attribute.normalize_kernel_name("void gemm<128, 128>(float*)")
    assert (a, b) == ("gemm<64, 128>", "gemm<128, 128>")


# --- Layers -------------------------------------------------------------------------------------


def test_layer_of_is_the_longest_configured_prefix_by_dotted_parts() -> None:
    layers = Layers({"model.2": "C2f", "model.22": "Detect", "model.22.dfl": "DFL"})
    assert layers.layer_of("model.22.cv2.0.0.conv") == "model.22"
    assert layers.layer_of("model.22.dfl.conv") == "model.22.dfl"
    assert layers.layer_of("model.2.cv1") == "model.2"
    assert layers.layer_of("model.22") == "model.22"
    assert layers.layer_of("input") == "input"  # not a configured layer: its own
    assert layers.type_of("model.22") == "Detect"
    assert layers.type_of("input") == ""


# --- attribute ------------------------------------------------------------------------------------


def test_innermost_range_wins_for_nested_modules() -> None:
    events = [
        step(1, 0.0, 100.0),
        module_range("model.2", 10.0, 90.0),
        module_range("model.2.cv1", 11.0, 30.0),
        module_range("model.2.cv1.conv", 12.0, 20.0),
        module_range("model.2.m.0", 40.0, 60.0),
        *launched("in_conv", 1, 13.0, 50.0, 1.0),
        *launched("in_cv1", 2, 25.0, 51.0, 1.0),
        *launched("between", 3, 35.0, 52.0, 1.0),
        *launched("in_m0", 4, 45.0, 53.0, 1.0),
        *launched("after_m0", 5, 70.0, 74.0, 1.0),
    ]
    assert where(attributed(events)) == {
        "in_conv": (0, "model.2", "model.2.cv1.conv"),
        "in_cv1": (0, "model.2", "model.2.cv1"),
        "between": (0, "model.2", "model.2"),
        "in_m0": (0, "model.2", "model.2.m.0"),
        "after_m0": (0, "model.2", "model.2"),
    }


def test_a_kernel_launched_in_a_step_outside_module_ranges_is_unattributed() -> None:
    events = [
        step(1, 0.0, 100.0),
        module_range("model.0", 10.0, 20.0),
        *launched("before", 1, 5.0, 6.0, 1.0),
        *launched("after", 2, 25.0, 26.0, 1.0),
    ]
    frame = attributed(events)
    assert where(frame) == {
        "before": (0, UNATTRIBUTED, UNATTRIBUTED),
        "after": (0, UNATTRIBUTED, UNATTRIBUTED),
    }
    assert set(frame["layer_type"]) == {""}


def test_a_range_on_another_thread_does_not_claim_a_kernel() -> None:
    events = [
        step(1, 0.0, 100.0),
        module_range("model.0", 10.0, 20.0, tid=202),
        *launched("k", 1, 15.0, 16.0, 1.0),
    ]
    assert where(attributed(events)) == {"k": (0, UNATTRIBUTED, UNATTRIBUTED)}


def test_kernels_launched_outside_every_step_are_not_counted() -> None:
    events = [
        step(1, 100.0, 200.0),
        step(2, 300.0, 400.0),
        module_range("model.0", 50.0, 350.0),
        *launched("warmup", 1, 60.0, 61.0, 1.0),
        *launched("between_steps", 2, 250.0, 251.0, 1.0),
        *launched("after", 3, 450.0, 451.0, 1.0),
        *launched("counted", 4, 310.0, 311.0, 1.0),
    ]
    assert where(attributed(events)) == {"counted": (1, "model.0", "model.0")}


def test_the_iteration_is_the_step_of_the_launch_not_of_the_execution() -> None:
    events = [
        step(8, 0.0, 100.0),
        step(9, 100.0, 200.0),
        module_range("model.22", 90.0, 99.0),
        *launched("late", 1, 95.0, 130.0, 20.0),  # runs during step 9
        module_range("model.0", 101.0, 110.0),
        *launched("early", 2, 105.0, 151.0, 1.0),
    ]
    assert where(attributed(events)) == {
        "late": (0, "model.22", "model.22"),
        "early": (1, "model.0", "model.0"),
    }


def test_an_unlinked_kernel_is_placed_in_a_step_by_its_own_start_and_unattributed() -> None:
    events = [step(1, 0.0, 100.0), step(2, 100.0, 200.0), module_range("model.0", 110.0, 190.0)]
    events += [gpu("orphan", 42, ts=150.0, dur=3.0), gpu("outside", 43, ts=250.0, dur=3.0)]
    parsed = trace.parse_gpu(events)
    assert parsed.unlinked == 2
    assert where(attribute.attribute(parsed, YOLO_LAYERS)) == {"orphan": (1, UNATTRIBUTED, UNATTRIBUTED)}


def test_rows_carry_names_types_kinds_times_and_launch_facts() -> None:
    events = [
        step(1, 0.0, 100.0),
        module_range("model.0.conv", 1.0, 50.0),
        *launched(
            "void conv<3>(float*)",
            1,
            2.0,
            10.0,
            4.5,
            grid=[80, 1, 1],
            block=[128, 2, 1],
            registers=64,
            shared_memory=2048,
            occupancy=50.0,
        ),
        *launched("Memcpy DtoD (Device -> Device)", 2, 3.0, 15.0, 1.5, cat="gpu_memcpy"),
    ]
    frame = attributed(events, Layers({"model.0": "Conv"}))
    assert list(frame.columns) == attribute.COLUMNS
    assert frame.to_dict("records") == [
        {
            "iteration": 0,
            "layer": "model.0",
            "layer_type": "Conv",
            "module": "model.0.conv",
            "kernel": "conv<3>",
            "kind": "kernel",
            "start_us": 10.0,
            "dur_us": 4.5,
            "grid": "80x1x1",
            "block": "128x2x1",
            "registers": 64,
            "shared_memory": 2048,
            "occupancy_pct": 50.0,
        },
        {
            "iteration": 0,
            "layer": "model.0",
            "layer_type": "Conv",
            "module": "model.0.conv",
            "kernel": "Memcpy DtoD",
            "kind": "memcpy",
            "start_us": 15.0,
            "dur_us": 1.5,
            "grid": "",
            "block": "",
            "registers": 0,
            "shared_memory": 0,
            "occupancy_pct": 0.0,
        },
    ]


def test_no_steps_means_nothing_is_counted() -> None:
    frame = attributed([module_range("model.0", 0.0, 10.0), *launched("k", 1, 1.0, 2.0, 1.0)])
    assert frame.empty
    assert list(frame.columns) == attribute.COLUMNS


# --- busy_us --------------------------------------------------------------------------------------


def test_busy_us_merges_overlapping_intervals_per_iteration() -> None:
    frame = pd.DataFrame(
        {
            "iteration": [0, 0, 0, 0, 0, 1, 1, 1],
            "start_us": [0.0, 5.0, 6.0, 20.0, 30.0, 100.0, 100.0, 110.0],
            "dur_us": [10.0, 10.0, 2.0, 5.0, 0.0, 4.0, 4.0, 1.0],
        }
    )
    # iteration 0: [0,10) u [5,15) u [6,8) = [0,15) -> 15, plus [20,25) -> 5, plus an empty one
    # iteration 1: [100,104) twice -> 4, plus [110,111) -> 1
    assert attribute.busy_us(frame).to_dict() == {0: 20.0, 1: 5.0}


def test_busy_us_of_touching_intervals_is_their_sum() -> None:
    frame = pd.DataFrame({"iteration": [0, 0, 0], "start_us": [10.0, 0.0, 4.0], "dur_us": [3.0, 4.0, 6.0]})
    assert attribute.busy_us(frame).to_dict() == {0: 13.0}


# --- the real trace -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real() -> tuple[trace.ParsedTrace, pd.DataFrame]:
    parsed = trace.parse(REAL_TRACE, gpu=True)
    return parsed, attribute.attribute(parsed, YOLO_LAYERS)


def test_real_trace_every_kernel_is_linked(real: tuple[trace.ParsedTrace, pd.DataFrame]) -> None:
    parsed, frame = real
    assert parsed.unlinked == 0
    assert len(parsed.steps) == 2
    assert len(frame) == len(parsed.activities)  # every activity falls in one of the two steps


def test_real_trace_iterations_launch_the_same_kernels(real: tuple[trace.ParsedTrace, pd.DataFrame]) -> None:
    _, frame = real
    kernels = frame[frame["kind"] == "kernel"]
    counts = kernels.groupby("iteration").size().to_dict()
    assert set(counts) == {0, 1}
    assert counts[0] == counts[1] > 400
    by_name = kernels.groupby(["iteration", "layer", "module", "kernel"]).size().unstack("iteration")
    assert (by_name[0] == by_name[1]).all()


def test_real_trace_every_kernel_belongs_to_a_layer(real: tuple[trace.ParsedTrace, pd.DataFrame]) -> None:
    _, frame = real
    assert UNATTRIBUTED not in set(frame["layer"])
    assert set(frame["layer"]) == {"input", *(f"model.{i}" for i in range(23))}
    assert set(frame.loc[frame["kind"] == "memcpy", "layer"]) == {"input"}


def raw_gpu_time(parsed: trace.ParsedTrace) -> dict[int, float]:
    """Per step, the GPU time of the activities launched in it, straight from the parsed trace."""
    steps = sorted(parsed.steps, key=lambda s: s.start_us)
    result = dict.fromkeys(range(len(steps)), 0.0)
    for act in parsed.activities:
        assert act.launch_ts is not None
        (index,) = [i for i, s in enumerate(steps) if s.start_us <= act.launch_ts <= s.end_us]
        result[index] += act.dur_us
    return result


def test_real_trace_layer_times_add_up_to_the_total(real: tuple[trace.ParsedTrace, pd.DataFrame]) -> None:
    parsed, frame = real
    per_layer = frame.groupby(["iteration", "layer"])["dur_us"].sum().groupby(level="iteration").sum()
    total = raw_gpu_time(parsed)
    assert set(total) == {0, 1}
    for i in (0, 1):
        assert per_layer[i] == pytest.approx(total[i], rel=1e-6)
        assert 500.0 < total[i] < 5000.0  # yolov8n fp16 bs1 on an H200: about 1.2 ms of GPU time


def test_real_trace_busy_time_is_at_most_the_sum(real: tuple[trace.ParsedTrace, pd.DataFrame]) -> None:
    _, frame = real
    busy = attribute.busy_us(frame)
    total = frame.groupby("iteration")["dur_us"].sum()
    for i in (0, 1):
        assert 0.9 * total[i] < busy[i] <= total[i] + 1e-9
