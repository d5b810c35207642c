"""The noise-aware verdict on synthetic samples: what must fail, and what must NOT fail."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from factories import measurement

from kernelgate.baseline import store as baseline
from kernelgate.config import GateConfig, Scope, Threshold
from kernelgate.measure.results import Dist, combine
from kernelgate.verdict.compare import Verdict, compare, confirmed, noise_aware_rule

TEN = Threshold(rel=0.10, floor_us=5.0)


def noisy(center: float, n: int = 20, spread: float = 0.005, seed: int = 0) -> tuple[float, ...]:
    rng = random.Random(seed)
    return tuple(center * (1 + rng.uniform(-spread, spread)) for _ in range(n))


def rounds(*centers: float, n: int = 20, seed: int = 0) -> Dist:
    return Dist.concat([Dist(noisy(c, n, seed=seed + i)) for i, c in enumerate(centers)])


def test_a_clear_significant_slowdown_regresses() -> None:
    judgement = noise_aware_rule(rounds(100, 100.3, 99.8), Dist(noisy(115, seed=9)), TEN)
    assert judgement.verdict is Verdict.REGRESSED
    assert judgement.p_value is not None and judgement.p_value < 1e-6
    assert judgement.noise_pct is not None and judgement.noise_pct < 1.0


def test_a_clear_speedup_is_improved_not_failed() -> None:
    assert noise_aware_rule(Dist(noisy(100)), Dist(noisy(80, seed=3)), TEN).verdict is Verdict.IMPROVED


@pytest.mark.parametrize(
    ("label", "base", "current", "verdict"),
    [
        # over threshold, but the baseline's own rounds moved as much: process noise explains it
        ("inside round spread", rounds(100, 118, 96), Dist(noisy(114, seed=5)), Verdict.AMBIGUOUS),
        # over threshold and floor, but the samples overlap: not significant
        (
            "not significant",
            Dist((100.0, 140.0, 90.0, 150.0, 95.0)),
            Dist((96, 150, 160, 91, 145)),
            Verdict.AMBIGUOUS,
        ),
        # +20 % but only +2 µs: under the 5 µs floor
        ("under the floor", Dist(noisy(10)), Dist(noisy(12, seed=2)), Verdict.UNCHANGED),
        # +6 µs but only +6 %: under the 10 % threshold
        ("under the threshold", Dist(noisy(100)), Dist(noisy(106, seed=2)), Verdict.UNCHANGED),
        ("identical", Dist((50.0,) * 20), Dist((50.0,) * 20), Verdict.UNCHANGED),
    ],
)
def test_changes_that_must_not_fail(label: str, base: Dist, current: Dist, verdict: Verdict) -> None:
    assert noise_aware_rule(base, current, TEN).verdict is verdict, label


def test_too_few_samples_fall_back_to_threshold_and_floor() -> None:
    judgement = noise_aware_rule(Dist((100.0, 100.0)), Dist((130.0, 130.0)), TEN)
    assert judgement.verdict is Verdict.REGRESSED and judgement.p_value is None


def test_kernel_swap_without_slowdown_is_reported_not_failed() -> None:
    base = measurement({"model.3": 40.0}, {"model.3.conv :: algo_a": 40.0})
    cur = measurement({"model.3": 40.5}, {"model.3.conv :: algo_b": 40.5})
    comparison = compare(base, cur, GateConfig())
    (layer,) = comparison.of(Scope.LAYER)
    assert layer.verdict is Verdict.KERNEL_SWAPPED and layer.note == "1 kernel(s) in, 1 out"
    assert {d.verdict for d in comparison.of(Scope.KERNEL)} == {Verdict.NEW, Verdict.MISSING}
    assert not comparison.failed


def test_kernel_swap_with_a_slowdown_still_fails() -> None:
    base = measurement({"model.3": 40.0}, {"model.3.conv :: algo_a": 40.0})
    cur = measurement({"model.3": 60.0}, {"model.3.conv :: algo_b": 60.0})
    comparison = compare(base, cur, GateConfig())
    assert [d.name for d in comparison.of(Scope.LAYER, Verdict.REGRESSED)] == ["model.3"]
    assert comparison.failed


def test_a_failure_that_does_not_recur_in_the_confirm_run_is_downgraded() -> None:
    base = measurement({"model.2": 100.0, "model.3": 50.0})
    first = compare(base, measurement({"model.2": 130.0, "model.3": 50.0}), GateConfig())
    again = compare(base, measurement({"model.2": 101.0, "model.3": 50.0}), GateConfig())
    assert first.failed
    final = confirmed(first, again)
    assert not final.failed
    (layer,) = [d for d in final.of(Scope.LAYER) if d.name == "model.2"]
    assert layer.verdict is Verdict.AMBIGUOUS and layer.note == "not confirmed (re-run: 101.0 µs)"


def test_a_failure_that_recurs_stays_and_carries_both_numbers() -> None:
    base = measurement({"model.2": 100.0})
    first = compare(base, measurement({"model.2": 130.0}), GateConfig())
    again = compare(base, measurement({"model.2": 128.0}), GateConfig())
    final = confirmed(first, again)
    assert final.failed
    (layer,) = final.of(Scope.LAYER, Verdict.REGRESSED)
    assert (layer.current_us, layer.confirm_us) == (130.0, 128.0)


def test_combine_keeps_rounds_and_zero_fills_a_kernel_absent_in_one_round() -> None:
    one = measurement({"model.0": 10.0}, {"model.0.conv :: a": 10.0})
    two = measurement({"model.0": 12.0}, {"model.0.conv :: b": 12.0})
    both = combine([one, two])
    assert both.total.rounds == (5, 5) and both.total.round_medians == (10.0, 12.0)
    kernels = {k.name: k for k in both.kernels}
    assert kernels["a"].time.samples == (10.0,) * 5 + (0.0,) * 5
    assert kernels["b"].time.samples == (0.0,) * 5 + (12.0,) * 5
    assert kernels["a"].calls == 0.5
    assert both.iterations == 10


def test_rounds_survive_the_baseline_file(tmp_path: Path) -> None:
    from factories import entry

    path = tmp_path / "0001_kernelgate.json"
    first = entry("b::t", measurement({"model.0": 10.0}))
    doc = baseline.document([first], "sm90-nvidia-h200", {}, {}, "2026-11-21T00:00:00+00:00", "5.3.1")
    baseline.write_atomic(path, baseline.dumps(doc))
    merged = baseline.merge(path, [entry("b::t", measurement({"model.0": 11.0}))], append=True)
    (only,) = merged
    assert only.measurement.layers[0].time.round_medians == (10.0, 11.0)
    doc = baseline.document(merged, "sm90-nvidia-h200", {}, {}, "2026-11-21T00:00:00+00:00", "5.3.1")
    baseline.write_atomic(path, baseline.dumps(doc))
    (loaded,) = baseline.load(path).values()
    assert loaded.measurement.total.rounds == (5, 5)
