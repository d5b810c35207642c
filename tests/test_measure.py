"""Building a Measurement from attributed activities, and its JSON form."""

from __future__ import annotations

import json
import statistics
from dataclasses import replace
from typing import Any

import pytest
from factories import launched, module_range, step
from hypothesis import given
from hypothesis import strategies as st

from kernelgate.measure import attribute, trace
from kernelgate.measure.aggregate import build
from kernelgate.measure.results import Dist, KernelStat, LayerStat, Measurement
from kernelgate.models.layers import Layers

LAYERS = Layers({"model.0": "Conv", "model.9": "SPPF", "model.10": "Upsample"})
CONV = "void implicit_convolve_sgemm<float, 3>(int, float*)"
CONV_FACTS: dict[str, Any] = {
    "grid": [80, 1, 1],
    "block": [128, 1, 1],
    "registers": 64,
    "shared_memory": 2048,
    "occupancy": 50.0,
}


def iteration(
    t0: float, corr: int, conv: tuple[float, float], cat: float, upsample: float | None
) -> list[dict[str, Any]]:
    """One forward pass starting at ``t0``: input copy, model.0 (two conv calls), model.9, model.10."""
    events = [
        step(corr, t0, t0 + 100.0),
        module_range("input", t0 + 1, t0 + 4),
        *launched("Memcpy HtoD (Pageable -> Device)", corr, t0 + 2, t0 + 3, 2.0, cat="gpu_memcpy"),
        module_range("model.0", t0 + 5, t0 + 30),
        module_range("model.0.conv", t0 + 6, t0 + 28),
        *launched(CONV, corr + 1, t0 + 10, t0 + 12, conv[0], **CONV_FACTS),
        *launched(CONV, corr + 2, t0 + 20, t0 + 22, conv[1], **CONV_FACTS),
        module_range("model.9", t0 + 35, t0 + 60),
        *launched("triton_poi_fused_cat_3", corr + 3, t0 + 40, t0 + 42, cat),
        module_range("model.10", t0 + 65, t0 + 90),
    ]
    if upsample is not None:
        events += launched("void upsample_nearest2d<float>(float*)", corr + 4, t0 + 70, t0 + 72, upsample)
    return events


@pytest.fixture(scope="module")
def measured() -> Measurement:
    # model.10 launches nothing in the second iteration.
    events = iteration(0.0, 10, conv=(4.0, 6.0), cat=10.0, upsample=3.0)
    events += iteration(100.0, 20, conv=(5.0, 7.0), cat=12.0, upsample=None)
    frame = attribute.attribute(trace.parse_gpu(events), LAYERS)
    return build(
        frame,
        benchmark="yolov8n-fp32-bs1-160",
        arch="sm90-nvidia-h200",
        device="cuda",
        iterations=2,
        wall_us=[60.0, 70.0],
        environment={"torch": "2.11.0", "gpu": "NVIDIA H200"},
        unlinked=3,
    )


def test_header(measured: Measurement) -> None:
    assert (measured.benchmark, measured.arch, measured.device) == (
        "yolov8n-fp32-bs1-160",
        "sm90-nvidia-h200",
        "cuda",
    )
    assert (measured.iterations, measured.unlinked) == (2, 3)
    assert measured.environment == {"torch": "2.11.0", "gpu": "NVIDIA H200"}


def test_total_busy_and_wall_are_per_iteration(measured: Measurement) -> None:
    assert measured.total == Dist((25.0, 26.0))  # 2 + 4 + 6 + 10 + 3, and 2 + 5 + 7 + 12
    assert measured.busy == Dist((25.0, 26.0))  # nothing overlaps
    assert measured.wall == Dist((60.0, 70.0))


def test_layers_in_order_of_first_start_with_zero_filled_iterations(measured: Measurement) -> None:
    assert measured.layers == (
        LayerStat("input", "", Dist((2.0, 2.0))),
        LayerStat("model.0", "Conv", Dist((10.0, 12.0))),
        LayerStat("model.9", "SPPF", Dist((10.0, 12.0))),
        LayerStat("model.10", "Upsample", Dist((3.0, 0.0))),  # after model.9, though it sorts before it
    )
    assert measured.layer("model.10") == measured.layers[3]
    assert measured.layer("model.22") is None


def test_kernels_with_calls_per_iteration_and_launch_facts(measured: Measurement) -> None:
    assert [(k.key, k.layer, k.time.samples, k.calls) for k in measured.kernels] == [
        ("input :: Memcpy HtoD", "input", (2.0, 2.0), 1.0),
        ("model.0.conv :: implicit_convolve_sgemm<float, 3>", "model.0", (10.0, 12.0), 2.0),
        ("model.9 :: triton_poi_fused_cat", "model.9", (10.0, 12.0), 1.0),
        ("model.10 :: upsample_nearest2d<float>", "model.10", (3.0, 0.0), 0.5),
    ]
    conv = measured.kernels[1]
    assert conv.launch == {
        "grid": "80x1x1",
        "block": "128x1x1",
        "registers": 64,
        "shared_memory": 2048,
        "occupancy_pct": 50.0,
    }
    assert measured.kernels[0].launch == {}


def test_host_overhead_is_median_wall_minus_median_busy(measured: Measurement) -> None:
    assert measured.host_overhead_us == pytest.approx(65.0 - 25.5)


def test_host_overhead_is_never_negative(measured: Measurement) -> None:
    assert replace(measured, wall=Dist((10.0, 12.0))).host_overhead_us == 0.0


def test_iterations_without_any_activity_are_zero() -> None:
    events = iteration(0.0, 10, conv=(4.0, 6.0), cat=10.0, upsample=3.0)
    frame = attribute.attribute(trace.parse_gpu(events), LAYERS)
    m = build(frame, benchmark="b", arch="a", device="cuda", iterations=3, wall_us=[1, 2, 3], environment={})
    assert m.total == Dist((25.0, 0.0, 0.0))
    assert m.layer("model.0") == LayerStat("model.0", "Conv", Dist((10.0, 0.0, 0.0)))
    assert m.kernels[1].calls == pytest.approx(2 / 3)


# --- Dist -------------------------------------------------------------------------------------------


def test_dist_statistics() -> None:
    d = Dist(tuple(float(v) for v in range(1, 11)))
    assert (d.n, d.median) == (10, 5.5)
    assert d.quantile(0.10) == pytest.approx(1.9)
    assert d.quantile(0.90) == pytest.approx(9.1)
    assert d.to_json() == {"median": 5.5, "n": 10, "p10": 1.9, "p90": 9.1, "samples": list(d.samples)}


def test_dist_of_one_or_no_samples() -> None:
    assert Dist((7.0,)).to_json() == {"median": 7.0, "n": 1, "p10": 7.0, "p90": 7.0, "samples": [7.0]}
    assert Dist(()).median == 0.0


def test_dist_json_rounds_to_nanoseconds() -> None:
    assert Dist((1.23456, 2.0)).to_json()["samples"] == [1.235, 2.0]


# --- JSON round trip ------------------------------------------------------------------------------


def test_measurement_json_round_trip(measured: Measurement) -> None:
    data = json.loads(json.dumps(measured.to_json()))
    assert Measurement.from_json(data) == measured


def test_measurement_json_fields(measured: Measurement) -> None:
    data = measured.to_json()
    assert data["host_overhead_us"] == 39.5
    assert data["unlinked_kernels"] == 3
    assert list(data["environment"]) == ["gpu", "torch"]  # sorted
    assert data["layers"][3] == {
        "name": "model.10",
        "type": "Upsample",
        "time_us": {"median": 1.5, "n": 2, "p10": 0.3, "p90": 2.7, "samples": [3.0, 0.0]},
    }
    assert data["kernels"][3]["calls_per_iter"] == 0.5


def test_kernel_stat_from_json_without_launch() -> None:
    data = {
        "layer": "model.0",
        "module": "model.0.conv",
        "name": "k",
        "calls_per_iter": 1.0,
        "time_us": {"samples": [1.0, 2.0]},
    }
    assert KernelStat.from_json(data) == KernelStat("model.0", "model.0.conv", "k", Dist((1.0, 2.0)), 1.0, {})


# --- layer groups -----------------------------------------------------------------------------------


def _grouped_build(groups: dict[str, str] | None) -> Measurement:
    events = iteration(0.0, 10, conv=(4.0, 6.0), cat=10.0, upsample=3.0)
    frame = attribute.attribute(trace.parse_gpu(events), LAYERS)
    return build(
        frame, benchmark="b", arch="a", device="cuda", iterations=1, wall_us=[50.0], environment={},
        groups=groups,
    )  # fmt: skip


def test_build_keeps_the_groups_of_the_layers_that_ran() -> None:
    m = _grouped_build({"model.0": "backbone", "model.9": "backbone", "model.10": "neck", "model.99": "head"})
    assert m.groups == {"model.0": "backbone", "model.9": "backbone", "model.10": "neck"}
    assert _grouped_build(None).groups == {}


def test_groups_round_trip_and_are_optional_in_json(measured: Measurement) -> None:
    assert "groups" not in measured.to_json()  # records without groups look as before
    grouped = replace(measured, groups={"model.9": "backbone", "model.0": "backbone"})
    data = json.loads(json.dumps(grouped.to_json()))
    assert data["groups"] == {"model.0": "backbone", "model.9": "backbone"}
    assert Measurement.from_json(data) == grouped
    del data["groups"]
    assert Measurement.from_json(data).groups == {}


@pytest.mark.parametrize("bad", [["model.0"], {"model.0": 1}, "backbone"])
def test_groups_of_the_wrong_shape_are_refused(measured: Measurement, bad: object) -> None:
    data = measured.to_json() | {"groups": bad}
    with pytest.raises(ValueError, match="'groups'"):
        Measurement.from_json(data)


def test_combined_rounds_keep_the_groups(measured: Measurement) -> None:
    from kernelgate.measure.results import combine

    first = replace(measured, groups={"model.0": "backbone"})
    second = replace(measured, groups={"model.0": "head", "model.10": "neck"})
    assert combine([first, second]).groups == {"model.0": "backbone", "model.10": "neck"}


@given(
    st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False), min_size=1, max_size=80),
    st.sampled_from([0.01, 0.10, 0.25, 0.5, 0.90, 0.99]),
)
def test_a_percentile_is_the_one_statistics_quantiles_gives(samples: list[float], q: float) -> None:
    expected = (
        statistics.quantiles(samples, n=100, method="inclusive")[round(q * 100) - 1]
        if len(samples) > 1
        else samples[0]
    )
    assert Dist(tuple(samples)).quantile(q) == expected
