"""Hints: read off the two measurements, one per kind of evidence; none where the data shows nothing."""

from __future__ import annotations

import dataclasses

from factories import dist, kernel, measurement

from kernelgate.measure.results import Measurement
from kernelgate.verdict.hints import HintKind, benchmark_hints, layer_hints

CONV = {"grid": "4x25x1", "block": "384x1x1", "registers": 168, "shared_memory": 2048, "occupancy_pct": 62.0}


def with_kernels(m: Measurement, *kernels: object) -> Measurement:
    return dataclasses.replace(m, kernels=tuple(kernels))


def kinds(hints: tuple[object, ...]) -> list[HintKind]:
    return [h.kind for h in hints]  # type: ignore[attr-defined]


def test_kernel_swapped_in_the_same_module() -> None:
    base = with_kernels(
        measurement({"model.1": 20.0}), kernel("model.1.conv :: cudnn::implicit_gemm<a>", 20.0)
    )
    cur = with_kernels(measurement({"model.1": 30.0}), kernel("model.1.conv :: sm80_xmma_fprop<b>", 30.0))
    (hint,) = layer_hints("model.1", base, cur)
    assert hint.kind is HintKind.KERNEL_SWAPPED
    assert "conv: implicit_gemm → sm80_xmma_fprop" in hint.text


def test_grid_block_and_occupancy_changes() -> None:
    smaller = {**CONV, "grid": "2x25x1", "registers": 200, "occupancy_pct": 31.0}
    base = with_kernels(measurement({"model.1": 20.0}), kernel("model.1.conv :: gemm", 20.0, launch=CONV))
    cur = with_kernels(measurement({"model.1": 30.0}), kernel("model.1.conv :: gemm", 30.0, launch=smaller))
    hints = layer_hints("model.1", base, cur)
    assert kinds(hints) == [HintKind.LAUNCH_SHAPE_CHANGED, HintKind.OCCUPANCY_DROPPED]
    assert "conv gemm: grid 4x25x1 → 2x25x1, registers 168 → 200" in hints[0].text
    assert "conv gemm: 62 % → 31 %" in hints[1].text


def test_more_launches_says_whether_each_launch_got_slower() -> None:
    base = with_kernels(
        measurement({"model.1": 20.0}), kernel("model.1.conv :: gemm", 10.0), kernel("model.1.bn :: bn", 10.0)
    )
    same = with_kernels(
        measurement({"model.1": 40.0}),
        kernel("model.1.conv :: gemm", 20.0, calls=2),
        kernel("model.1.bn :: bn", 10.0),
    )
    (hint,) = layer_hints("model.1", base, same)
    assert hint.kind is HintKind.MORE_LAUNCHES
    assert hint.text.startswith("1 kernel(s) ran more often per iteration (conv gemm 1 → 2)")
    assert "its kernels are not slower" in hint.text
    slower = with_kernels(measurement({"model.1": 40.0}), kernel("model.1.conv :: gemm", 30.0, calls=2))
    (hint,) = layer_hints("model.1", base, slower)
    assert hint.text.endswith("and some launches also take longer")


def test_no_hint_when_nothing_but_time_changed() -> None:
    base = with_kernels(measurement({"model.1": 20.0}), kernel("model.1.conv :: gemm", 20.0, launch=CONV))
    cur = with_kernels(measurement({"model.1": 30.0}), kernel("model.1.conv :: gemm", 30.0, launch=CONV))
    assert layer_hints("model.1", base, cur) == ()
    assert benchmark_hints(base, cur) == ()


def test_host_overhead_growth_on_a_launch_bound_benchmark() -> None:
    base = measurement({"model.0": 1000.0}, wall=4000.0)
    cur = dataclasses.replace(measurement({"model.0": 1000.0}, wall=4400.0))
    (hint,) = benchmark_hints(base, cur)
    assert hint.kind is HintKind.HOST_OVERHEAD_GREW
    assert hint.text.startswith("host overhead (wall - GPU busy) grew 3.000 ms → 3.400 ms (+13.3 %)")
    assert "GPU is busy 23 % of the wall time, so this benchmark is launch-bound" in hint.text
    assert benchmark_hints(base, measurement({"model.0": 1000.0}, wall=4100.0)) == ()  # +3.3 %: below 5 %


def test_host_overhead_growth_from_zero() -> None:
    """CPU mode: the ops can fill the wall time, so the baseline's host overhead may be 0."""
    (hint,) = benchmark_hints(
        measurement({"model.0": 1000.0}, wall=900.0), measurement({"model.0": 1000.0}, wall=1100.0)
    )
    assert hint.text.startswith(
        "host overhead (wall - GPU busy) grew 0.0 µs → 100.0 µs while the wall time went 900.0 µs → 1.100 ms"
    )


def test_host_overhead_growth_on_a_cpu_run_speaks_of_cpu_operators() -> None:
    base = dataclasses.replace(measurement({"model.0": 1000.0}, wall=4000.0), device="cpu")
    (hint,) = benchmark_hints(base, dataclasses.replace(base, wall=measurement(wall=4400.0).wall))
    assert hint.text.startswith("host overhead (wall - CPU ops) grew 3.000 ms → 3.400 ms (+13.3 %)")
    assert hint.text.endswith(
        "CPU operators run 23 % of the wall time, so this benchmark is overhead-bound: "
        "Python and framework cost count more than operator time"
    )
    assert "GPU" not in hint.text and "launch" not in hint.text


def test_clock_event_reasons_other_than_idle() -> None:
    base = measurement({"model.0": 100.0})
    base = dataclasses.replace(base, environment={**base.environment, "clock_event_reasons": "0x0"})
    throttled = dataclasses.replace(base, environment={**base.environment, "clock_event_reasons": "0x20"})
    idle = dataclasses.replace(base, environment={**base.environment, "clock_event_reasons": "0x1"})
    assert kinds(benchmark_hints(base, throttled)) == [HintKind.CLOCKS_HELD_DOWN]
    assert benchmark_hints(base, idle) == ()


def test_dist_helper_is_per_iteration() -> None:
    assert dist([1.0, 2.0, 3.0]).median == 2.0
