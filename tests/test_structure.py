"""Structural changes: what a forward launches, module by module (kernelgate.verdict.structure)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from factories import kernel, layer_of, measurement

from kernelgate.baseline import store
from kernelgate.measure.results import KernelStat, Measurement, combine
from kernelgate.verdict import structure

ROOT = Path(__file__).resolve().parents[1]
SILU = "at::native::vectorized_elementwise_kernel<8, silu_kernel>"
ADD = "at::native::vectorized_elementwise_kernel<8, CUDAFunctor_add<c10::Half>>"
BILINEAR = "at::native::upsample_bilinear2d_out_frame<c10::Half>"
IM2COL = "at::native::im2col_kernel<c10::Half>"
GRID = {"grid": "[80, 1, 1]", "block": "[128, 1, 1]"}


def forward(*kernels: KernelStat) -> Measurement:
    return replace(measurement(layers={"model.6": 60.0, "model.7": 80.0}), kernels=kernels)


BASE = (
    kernel("model.6.cv1.conv :: sm90_xmma_fprop_implicit_gemm_f16", 20.0),
    kernel("model.6.cv1.conv :: cudnn::engines_precompiled::nchwToNhwcKernel<__half>", 2.0),
    kernel(f"model.6.cv1 :: {SILU}", 3.0, launch=GRID),
    kernel("model.7 :: at::native::upsample_nearest2d_out_frame<c10::Half>", 3.0, launch=GRID),
)


def test_the_same_forward_has_no_structural_change() -> None:
    assert structure.changes(forward(*BASE), forward(*BASE)) == ()


def test_another_conv_algorithm_is_no_structural_change() -> None:
    # cuDNN/cuBLAS pick per process and per GPU: another GEMM kernel, without the layout transform
    other = (kernel("model.6.cv1.conv :: nvjet_sm90_hsh_64x24_64x16_2x4_h_bz_NNT", 19.0), *BASE[2:])
    assert structure.changes(forward(*BASE), forward(*other)) == ()


@pytest.mark.parametrize(
    ("head", "what", "module"),
    [
        ((*BASE, kernel(f"model.6 :: {ADD}", 1.2)), "new", "model.6"),  # an added `o + 0`
        ((*BASE[:2], kernel(f"model.6.cv1 :: {SILU}", 6.0, calls=2.0, launch=GRID), BASE[3]),
         "launches", "model.6.cv1"),
        ((*BASE[:3], kernel(f"model.7 :: {BILINEAR}", 50.0)), "new", "model.7"),
        ((*BASE[:2], kernel(f"model.6.cv1 :: {SILU}", 3.0, launch={**GRID, "grid": "[160, 1, 1]"}), BASE[3]),
         "grid", "model.6.cv1"),
        ((kernel(f"model.6.cv1.conv :: {IM2COL}", 30.0), *BASE[2:]), "new", "model.6.cv1.conv"),
        ((kernel("model.6.cv1.conv :: Memcpy DtoH", 5.0), *BASE), "new", "model.6.cv1.conv"),
    ],
    ids=["added-kernel", "launched-twice", "bilinear", "other-grid", "cudnn-off", "device-to-host"],
)  # fmt: skip
def test_a_structural_change_is_found_in_its_module(
    head: tuple[KernelStat, ...], what: str, module: str
) -> None:
    found = structure.changes(forward(*BASE), forward(*head))
    assert found, "no structural change found"
    assert (found[0].what, found[0].module) == (what, module)
    assert found[0].layer == layer_of(module)
    assert module in structure.summary(found)


def test_a_workspace_memset_of_another_gemm_pick_is_no_structural_change() -> None:
    # the H100's nvjet pick for yolov8n fp16 bs8's model.15 conv zeroes its workspace, the H200's does
    # not (the full-matrix baselines of 2026-11-26); in a graph replay the memset is attributed to no module
    base = (kernel("model.6.cv1.conv :: Memset", 1.0), *BASE)
    other = (kernel("model.6.cv1.conv :: nvjet_sm90_hsh_256x64_64x5_4x1_v_bz_NNT", 19.0), *BASE[2:])
    assert structure.changes(forward(*base), forward(*other)) == ()
    assert structure.changes(forward(*other), forward(*base)) == ()
    assert structure.changes(forward(*BASE, kernel("(unattributed) :: Memset", 1.0)), forward(*BASE)) == ()
    # a memset in a module without engine kernels is the module's own: a change
    found = structure.changes(forward(*BASE), forward(*BASE, kernel("model.7 :: Memset", 1.0)))
    assert [(c.what, c.module) for c in found] == [("new", "model.7")]


def test_the_grid_inductor_autotuned_is_no_structural_change_its_kernels_are() -> None:
    pool = "triton_per_fused_max_pool2d_with_indices"
    base = forward(*BASE, kernel(f"model.7 :: {pool}", 4.0, launch={**GRID, "grid": "[6400, 1, 1]"}))
    other = forward(*BASE, kernel(f"model.7 :: {pool}", 4.0, launch={**GRID, "grid": "[400, 1, 1]"}))
    assert structure.changes(base, other) == ()
    twice = forward(*BASE, kernel(f"model.7 :: {pool}", 8.0, calls=2.0, launch=GRID))
    assert [(c.what, c.kernel) for c in structure.changes(base, twice)] == [("launches", pool)]
    assert [c.what for c in structure.changes(base, forward(*BASE))] == ["gone"]


def test_an_engine_that_appears_or_disappears_is_a_change() -> None:
    found = structure.changes(forward(*BASE), forward(*BASE[2:]))
    assert [(c.what, c.module, c.before, c.after) for c in found] == [
        ("engine", "model.6.cv1.conv", "present", "absent")
    ]


def test_kernels_that_not_every_process_launches_are_not_steady() -> None:
    # in one process of three: 0.33 launches a forward after combining the rounds
    head = combine([forward(*BASE, kernel(f"model.6 :: {ADD}", 1.2)), forward(*BASE), forward(*BASE)])
    assert structure.changes(forward(*BASE), head) == ()
    assert structure.changes(head, forward(*BASE)) == ()


def test_by_layer_joins_the_changes_of_each_layer() -> None:
    head = (*BASE[:3], kernel(f"model.7 :: {BILINEAR}", 50.0))
    layers = structure.by_layer(structure.changes(forward(*BASE), forward(*head)))
    assert list(layers) == ["model.7"]
    assert "new at::native::upsample_bilinear2d" in layers["model.7"]
    assert "gone at::native::upsample_nearest2d" in layers["model.7"]


def test_the_committed_h100_and_h200_baselines_launch_the_same_structure() -> None:
    """Two GPU models, two hosts, other cuDNN/cuBLAS choices (42 modules of yolo11n fp16 use other
    nvjet kernels): the same structure, so a runner's own choices never make a suspect."""
    h100 = store.load(ROOT / "baselines/sm90-nvidia-h100-80gb-hbm3/0001_kernelgate.json")
    h200 = store.load(ROOT / "baselines/sm90-nvidia-h200/0001_kernelgate.json")
    compared = 0
    for name, entry in h100.items():
        if name in h200 and entry.measurement.kernels:
            other = h200[name].measurement
            swapped = {k.key for k in entry.measurement.kernels} ^ {k.key for k in other.kernels}
            assert structure.changes(entry.measurement, other) == (), name
            compared += 1 if swapped else 0
    assert compared >= 5  # kernel names differ in most configurations, the structure in none
