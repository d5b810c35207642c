"""Verdicts: the median rule, matching of layers and kernels, what fails the gate."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import pytest
from factories import ARCH, BENCHMARK, dist, measurement

from kernelgate.config import GateConfig, Policy, Rule, Scope, Threshold
from kernelgate.measure.results import Measurement
from kernelgate.verdict.compare import Delta, Verdict, compare, fail_set, median_rule

# The thresholds these cases were written for (explicit, so a change of defaults does not move them).
TEN_FIVE = GateConfig(
    layer_threshold=0.10, kernel_threshold=0.25, total_threshold=0.05, floor_us=5.0, kernel_floor_us=5.0
)

TEN_PCT_5US = Threshold(rel=0.10, floor_us=5.0)


def verdicts(comparison_deltas: tuple[Delta, ...]) -> dict[str, Verdict]:
    return {d.name: d.verdict for d in comparison_deltas}


# --- median_rule -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "current", "verdict"),
    [
        (100.0, 111.0, Verdict.REGRESSED),  # +11 > max(10 % of 100, 5)
        (100.0, 110.0, Verdict.UNCHANGED),  # exactly at the limit
        (100.0, 105.0, Verdict.UNCHANGED),
        (100.0, 100.0, Verdict.UNCHANGED),
        (100.0, 95.0, Verdict.UNCHANGED),
        (100.0, 90.0, Verdict.UNCHANGED),
        (100.0, 89.0, Verdict.IMPROVED),
        (20.0, 24.0, Verdict.UNCHANGED),  # +20 % but only 4 µs: under the floor
        (20.0, 16.0, Verdict.UNCHANGED),  # -20 %, 4 µs
        (20.0, 25.5, Verdict.REGRESSED),  # over the floor and over 10 %
        (20.0, 14.5, Verdict.IMPROVED),
        (1000.0, 1050.0, Verdict.UNCHANGED),  # 50 µs, far over the floor, but only 5 %
        (1000.0, 950.0, Verdict.UNCHANGED),
        (1000.0, 1101.0, Verdict.REGRESSED),
        (1000.0, 899.0, Verdict.IMPROVED),
        (0.0, 5.5, Verdict.REGRESSED),  # from nothing: the floor alone decides
        (0.0, 4.5, Verdict.UNCHANGED),
    ],
)
def test_median_rule(base: float, current: float, verdict: Verdict) -> None:
    assert median_rule(dist(base), dist(current), TEN_PCT_5US).verdict is verdict


def test_median_rule_looks_at_the_median_not_the_outliers() -> None:
    base = dist([100.0, 100.0, 100.0, 100.0, 100.0])
    noisy = dist([100.0, 101.0, 99.0, 400.0, 400.0])
    slow = dist([120.0, 121.0, 119.0, 50.0, 50.0])
    assert median_rule(base, noisy, TEN_PCT_5US).verdict is Verdict.UNCHANGED
    assert median_rule(base, slow, TEN_PCT_5US).verdict is Verdict.REGRESSED


# --- compare ---------------------------------------------------------------------------------------


def test_compare_judges_total_layers_and_kernels() -> None:
    base = measurement(
        {"model.0": 100.0, "model.1": 200.0, "model.2": 300.0},
        {"model.0.conv :: gemm": 80.0, "model.1.cv1 :: gemm": 150.0, "model.2 :: cat": 20.0},
    )
    cur = measurement(
        {"model.0": 150.0, "model.1": 150.0, "model.2": 301.0},
        {"model.0.conv :: gemm": 130.0, "model.1.cv1 :: gemm": 100.0, "model.2 :: cat": 21.0},
    )
    result = compare(base, cur, TEN_FIVE)
    assert (result.benchmark, result.arch) == (BENCHMARK, ARCH)
    assert verdicts(result.of(Scope.TOTAL)) == {"total": Verdict.UNCHANGED}  # 600 -> 601
    assert verdicts(result.of(Scope.LAYER)) == {
        "model.0": Verdict.REGRESSED,
        "model.1": Verdict.IMPROVED,
        "model.2": Verdict.UNCHANGED,
    }
    assert verdicts(result.of(Scope.KERNEL)) == {
        "model.0.conv :: gemm": Verdict.REGRESSED,
        "model.1.cv1 :: gemm": Verdict.IMPROVED,
        "model.2 :: cat": Verdict.UNCHANGED,
    }
    assert [(d.scope, d.name) for d in result.failures] == [
        (Scope.LAYER, "model.0"),
        (Scope.KERNEL, "model.0.conv :: gemm"),
    ]
    assert result.failed is True


def test_compare_records_thresholds_and_medians() -> None:
    result = compare(
        measurement({"model.0": [100.0, 110.0, 120.0]}, {"model.0.conv :: gemm": 80.0}),
        measurement({"model.0": [130.0, 140.0, 150.0]}, {"model.0.conv :: gemm": 80.0}),
        GateConfig(
            layer_threshold=0.2, kernel_threshold=0.3, total_threshold=0.05, floor_us=2.0, kernel_floor_us=2.0
        ),
    )
    (layer,) = result.of(Scope.LAYER)
    assert (layer.baseline_us, layer.current_us, layer.delta_us) == (110.0, 140.0, 30.0)
    assert layer.delta_pct == pytest.approx(100 * 30 / 110)
    assert layer.threshold == Threshold(0.2, 2.0)
    assert result.of(Scope.KERNEL)[0].threshold == Threshold(0.3, 2.0)
    assert result.of(Scope.TOTAL)[0].threshold == Threshold(0.05, 2.0)


def test_compare_uses_rules_for_the_current_arch_and_benchmark() -> None:
    base = measurement({"model.0": 100.0, "model.1": 100.0})
    cur = measurement({"model.0": 130.0, "model.1": 130.0}, total=200.0)
    config = dataclasses.replace(
        TEN_FIVE, rules=(Rule(arch=ARCH, benchmark="yolov8n*", name="model.1", threshold=0.5),)
    )
    assert verdicts(compare(base, cur, config).of(Scope.LAYER)) == {
        "model.0": Verdict.REGRESSED,
        "model.1": Verdict.UNCHANGED,
    }
    other_arch = measurement({"model.0": 130.0, "model.1": 130.0}, total=200.0, arch="sm80-nvidia-a100")
    assert compare(base, other_arch, config).of(Scope.LAYER)[1].verdict is Verdict.REGRESSED


def test_changes_under_the_floor_or_under_the_percentage_do_not_fail() -> None:
    base = measurement(
        {"model.0": 20.0, "model.1": 1000.0, "model.2": 300.0},
        {"model.0.conv :: a": 12.0, "model.1.m.0 :: b": 900.0, "model.2 :: c": 4.0},
    )
    cur = measurement(
        # +20 % but 4 µs; +50 µs but 5 %; unchanged
        {"model.0": 24.0, "model.1": 1050.0, "model.2": 300.0},
        # +33 % but 4 µs; +100 µs but 11 % (kernel threshold 25 %); +100 % but 4 µs
        {"model.0.conv :: a": 16.0, "model.1.m.0 :: b": 1000.0, "model.2 :: c": 8.0},
        total=1325.0,  # +5 µs, +0.4 %
    )
    result = compare(base, cur, dataclasses.replace(TEN_FIVE, fail_on_new=True, fail_on_missing=True))
    assert {d.verdict for d in result.deltas} == {Verdict.UNCHANGED}
    assert result.failures == ()
    assert result.failed is False


def test_a_total_regression_alone_fails() -> None:
    base = measurement({"model.0": 100.0, "model.1": 100.0})
    cur = measurement({"model.0": 109.0, "model.1": 109.0})  # each +9 %, the total +18 µs = +9 %
    result = compare(base, cur, TEN_FIVE)
    assert [(d.scope, d.verdict) for d in result.failures] == [(Scope.TOTAL, Verdict.REGRESSED)]


# --- new and missing ------------------------------------------------------------------------------


@pytest.fixture
def changed_model() -> tuple[Measurement, Measurement]:
    base = measurement(
        {"model.0": 100.0, "model.1": 50.0}, {"model.0.conv :: gemm": 100.0, "model.1 :: old": 50.0}
    )
    cur = measurement(
        {"model.0": 100.0, "model.2": 50.0}, {"model.0.conv :: gemm": 100.0, "model.2 :: new": 50.0}
    )
    return base, cur


def test_new_and_missing_are_reported(changed_model: tuple[Measurement, Measurement]) -> None:
    base, cur = changed_model
    result = compare(base, cur, TEN_FIVE)
    assert verdicts(result.of(Scope.LAYER)) == {
        "model.0": Verdict.UNCHANGED,
        "model.2": Verdict.NEW,
        "model.1": Verdict.MISSING,
    }
    assert verdicts(result.of(Scope.KERNEL)) == {
        "model.0.conv :: gemm": Verdict.UNCHANGED,
        "model.2 :: new": Verdict.NEW,
        "model.1 :: old": Verdict.MISSING,
    }
    new, missing = result.of(Scope.LAYER, Verdict.NEW, Verdict.MISSING)
    assert (new.baseline_us, new.current_us, new.delta_us, new.delta_pct) == (None, 50.0, 50.0, None)
    assert (missing.baseline_us, missing.current_us, missing.delta_us, missing.delta_pct) == (
        50.0,
        None,
        -50.0,
        None,
    )
    assert result.of(Scope.KERNEL, Verdict.MISSING)[0].layer == "model.1"


@pytest.mark.parametrize(
    ("config", "failing"),
    [
        (TEN_FIVE, set()),
        (dataclasses.replace(TEN_FIVE, fail_on_new=True), {"model.2", "model.2 :: new"}),
        (dataclasses.replace(TEN_FIVE, fail_on_missing=True), {"model.1", "model.1 :: old"}),
        (
            dataclasses.replace(TEN_FIVE, fail_on_new=True, fail_on_missing=True),
            {"model.1", "model.1 :: old", "model.2", "model.2 :: new"},
        ),
    ],
)
def test_new_and_missing_fail_only_when_configured(
    changed_model: tuple[Measurement, Measurement], config: GateConfig, failing: set[str]
) -> None:
    base, cur = changed_model
    result = compare(base, cur, config)
    assert {d.name for d in result.failures} == failing
    assert result.failed is bool(failing)


def test_fail_set() -> None:
    assert fail_set(TEN_FIVE) == {Verdict.REGRESSED, Verdict.INCONCLUSIVE}
    warn = dataclasses.replace(TEN_FIVE, on_inconclusive=Policy.WARN)
    assert fail_set(warn) == {Verdict.REGRESSED}
    assert fail_set(dataclasses.replace(warn, fail_on_new=True, fail_on_missing=True)) == {
        Verdict.REGRESSED,
        Verdict.NEW,
        Verdict.MISSING,
    }


# --- kernels_of -----------------------------------------------------------------------------------


def test_kernels_of_a_layer_sorted_by_absolute_change() -> None:
    base = measurement(
        {"model.0": 300.0, "model.1": 100.0},
        {
            "model.0.conv :: small": 50.0,
            "model.0.conv :: faster": 100.0,
            "model.0.bn :: gone": 30.0,
            "model.0.conv :: slower": 100.0,
            "model.1 :: other": 10.0,
        },
    )
    cur = measurement(
        {"model.0": 300.0, "model.1": 200.0},
        {
            "model.0.conv :: small": 51.0,  # +1
            "model.0.conv :: faster": 60.0,  # -40
            "model.0.conv :: slower": 120.0,  # +20
            "model.0.act :: added": 35.0,  # new, +35
            "model.1 :: other": 110.0,  # another layer
        },
    )
    result = compare(base, cur, TEN_FIVE)
    assert [(d.name, d.delta_us) for d in result.kernels_of("model.0")] == [
        ("model.0.conv :: faster", -40.0),
        ("model.0.act :: added", 35.0),
        ("model.0.bn :: gone", -30.0),
        ("model.0.conv :: slower", 20.0),
        ("model.0.conv :: small", 1.0),
    ]
    assert [d.name for d in result.kernels_of("model.1")] == ["model.1 :: other"]
    assert result.kernels_of("model.9") == ()


def test_kernel_deltas_carry_calls_per_iteration() -> None:
    base = measurement({"model.0": 100.0}, {"model.0.conv :: gemm": 100.0, "model.0.bn :: gone": 5.0})
    cur = measurement({"model.0": 100.0}, {"model.0.conv :: gemm": 100.0})
    cur = replace(cur, kernels=(replace(cur.kernels[0], calls=2.0),))
    result = compare(base, cur, TEN_FIVE)
    assert [(d.name, d.baseline_calls, d.current_calls) for d in result.of(Scope.KERNEL)] == [
        ("model.0.conv :: gemm", 1.0, 2.0),
        ("model.0.bn :: gone", 1.0, None),
    ]
    assert [(d.baseline_calls, d.current_calls) for d in result.of(Scope.TOTAL) + result.of(Scope.LAYER)] == [
        (None, None),
        (None, None),
    ]
