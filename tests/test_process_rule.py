"""The same-host A/B counts processes, not iterations: an odd process on one side asks for more rounds
instead of failing an A/A run, a shift that every process shows is still caught at three processes a
side, and a failing row shows the A/B that decided it."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
from factories import process_step

from kernelgate.config import GateConfig, Scope, Threshold
from kernelgate.measure.results import Dist
from kernelgate.verdict.compare import Verdict, compare
from kernelgate.verdict.delta import noise_aware_rule, process_p, process_rule
from kernelgate.verdict.policy import Status
from kernelgate.verdict.reported import merged
from kernelgate.verdict.samehost import Outcome, decide
from kernelgate.verdict.settled import still_open

WALL = Threshold(0.10, 50.0)  # the latency's default threshold
LAYER = Threshold(0.01, 0.5)


def processes(medians: Sequence[float], jitter: float = 0.01, n: int = 20, seed: int = 0) -> Dist:
    """``n`` iterations around each process's median (±``jitter``), one round per process."""
    rng = random.Random(seed)
    samples = [m * (1 + rng.uniform(-jitter, jitter)) for m in medians for _ in range(n)]
    return Dist(tuple(samples), tuple(n for _ in medians))


# the A/A that failed on an H100 host (2026-11-25), as it can happen: three of the head's four
# processes ran yolov8n fp16's eager step ~25 % slower, the base's four did not
BASE = [5500.0, 5520.0, 5480.0, 5510.0]
ODD_HEAD = [7000.0, 6700.0, 6750.0, 5500.0]


def test_odd_processes_on_one_side_fail_pooled_iterations_but_not_the_process_rule() -> None:
    base, head = processes(BASE), processes(ODD_HEAD, seed=1)
    pooled = noise_aware_rule(base, head, WALL)
    assert pooled.verdict is Verdict.REGRESSED  # what the judge said before: "wall +21.7 %"
    assert pooled.p_value is not None and pooled.p_value < 1e-10
    found = process_rule(base, head, WALL)
    assert found.verdict is Verdict.AMBIGUOUS
    assert found.p_value is not None and found.p_value > 0.01


def test_a_shift_in_every_process_is_caught_at_three_processes_a_side() -> None:
    # device side: processes within 0.2 %, +3 % in the head
    base = processes([100.0, 100.2, 99.9], jitter=0.002)
    head = processes([103.1, 102.9, 103.0], jitter=0.002, seed=1)
    found = process_rule(base, head, LAYER)
    assert found.verdict is Verdict.REGRESSED and found.p_value is not None and found.p_value < 0.01
    # host side: processes within ±2 %, +20 % in the head
    base = processes([5500.0, 5600.0, 5450.0])
    head = processes([6600.0, 6700.0, 6550.0], seed=1)
    assert process_rule(base, head, WALL).verdict is Verdict.REGRESSED


def test_a_faster_head_is_improved_only_when_the_processes_say_so() -> None:
    base, head = processes([6600.0, 6700.0, 6550.0]), processes([5500.0, 5600.0, 5450.0], seed=1)
    assert process_rule(base, head, WALL).verdict is Verdict.IMPROVED
    assert process_rule(head, base, WALL).verdict is Verdict.REGRESSED


def test_within_the_threshold_the_process_rule_changes_nothing() -> None:
    base, head = processes(BASE), processes([b * 1.03 for b in BASE], seed=1)
    assert process_rule(base, head, WALL) == noise_aware_rule(base, head, WALL)


def test_process_p_edges() -> None:
    # fewer than three processes a side: no process test, the pooled rule alone
    assert process_p(processes([5.0, 5.1]), processes([6.0, 6.0, 6.1])) is None
    assert process_p(processes([5.0, 5.1, 5.0]), processes([6.0, 6.0])) is None
    same = Dist((5.0,) * 6, (2, 2, 2))
    assert process_p(same, same) == 1.0
    assert process_p(same, Dist((6.0,) * 6, (2, 2, 2))) == 0.0
    up = process_p(processes([100.0, 101.0, 99.0]), processes([110.0, 111.0, 109.0]))
    down = process_p(processes([110.0, 111.0, 109.0]), processes([100.0, 101.0, 99.0]))
    assert up == pytest.approx(down) and up is not None and up < 0.01  # one-sided, the way it moved


def test_the_judge_measures_more_rounds_for_odd_processes_and_passes_the_a_a() -> None:
    config = GateConfig()  # 3 to 6 processes a side
    stored = process_step(7002.0, seed=99)  # the stored baseline: another host, a slow process
    base = [process_step(w, seed=i) for i, w in enumerate([5500.0, 5520.0, 5480.0, 5510.0, 5490.0, 5530.0])]
    # two odd processes in the head's first four: pooled, +10.7 % at p < 1e-6
    head = [
        process_step(w, seed=10 + i) for i, w in enumerate([7000.0, 6700.0, 5500.0, 5505.0, 5495.0, 5510.0])
    ]
    screen = compare(stored, head[0], config)
    assert decide(screen, stored, base[:4], head[:4], config) is None  # not settled: more rounds
    # the judge's round line says why
    assert still_open(base[:2], head[:2], config) == "2 of at least 3 process(es) a side"
    assert still_open(base[:4], head[:4], config).startswith("within the noise of their limits: wall +")
    decision = decide(screen, stored, base, head, config)
    assert decision is not None and decision.outcome is Outcome.PASS, decision.reason
    assert decision.rounds == 6
    # half the head's processes odd, none of the base's: a doubt, never a pass nor a regression
    head = [process_step(w, seed=10 + i) for i, w in enumerate([*ODD_HEAD, 5505.0, 5495.0])]
    decision = decide(screen, stored, base, head, config)
    assert decision is not None and decision.outcome is Outcome.INCONCLUSIVE, decision.reason
    assert "wall" in decision.reason


def test_a_slower_latency_in_every_head_process_is_a_regression_with_each_process_shown() -> None:
    config = GateConfig()
    stored = process_step(7002.0, seed=99)  # slower than both sides: the screen alone saw an improvement
    base = [process_step(w, seed=i) for i, w in enumerate([5500.0, 5520.0, 5480.0])]
    head = [process_step(w, seed=10 + i) for i, w in enumerate([6700.0, 6720.0, 6680.0])]
    screen = compare(stored, head[0], config)
    decision = decide(screen, stored, base, head, config)
    assert decision is not None and decision.outcome is Outcome.REGRESSION
    final = merged(screen, decision)
    (row,) = [d for d in final.failures if d.scope is Scope.WALL]
    # the row shows what decided it (base -> head on this runner), not the stored baseline's -4 %
    assert row.baseline_us == pytest.approx(5500.0, rel=0.01)
    assert row.current_us == pytest.approx(6700.0, rel=0.01)
    assert row.delta_pct is not None and row.delta_pct > 20
    assert "against the stored baseline" in row.note
    assert "each process, round by round: base" in row.note


# per-process medians kept by the judge (samehost.json) on an H100, host 1752824029579, 2026-11-25
SLEEP_BASE = [193.8, 273.9, 184.1]  # host time of yolo11n fp32's model.9 (SPPF), µs
SLEEP_HEAD = [475.0, 472.2, 477.7]  # ... with a 0.2 ms time.sleep in its forward
AA_BASE = [5480.0, 5650.0, 5802.0, 5350.0]  # yolov8n fp16's latency, µs, an A/A run
AA_HEAD = [5416.0, 7056.0, 5593.0, 5585.0]


def test_the_measured_processes_a_sleep_fails_at_three_rounds_the_a_a_does_not() -> None:
    host = Threshold(0.5, 20.0)  # host_layer_threshold, host_floor_us
    found = process_rule(processes(SLEEP_BASE), processes(SLEEP_HEAD, seed=1), host)
    assert found.verdict is Verdict.REGRESSED, found
    assert process_rule(processes(AA_BASE), processes(AA_HEAD, seed=1), WALL).verdict is Verdict.UNCHANGED


def test_kernelgate_ab_judges_its_rounds_as_processes() -> None:
    """`kernelgate ab` compares two files of rounds of one runner: the process rule, as the judge;
    `kernelgate compare` of a stored baseline keeps the rule of the screen."""
    from factories import entry

    from kernelgate.measure.results import combine
    from kernelgate.offline import judge

    base = combine([process_step(w, seed=i) for i, w in enumerate(BASE)])
    head = combine([process_step(w, seed=10 + i) for i, w in enumerate(ODD_HEAD)])
    name = "benchmarks/test_yolo.py::test_yolo[yolov8n-fp16-bs1-640]"
    stored, current = {name: entry(name, base)}, {name: entry(name, head)}
    pooled = judge(stored, current, GateConfig(), "base.json")
    as_processes = judge(stored, current, GateConfig(), "base.json", processes=True)
    (before,), (after,) = pooled, as_processes
    assert before.comparison is not None and after.comparison is not None
    assert [d.scope for d in before.comparison.failures] == [Scope.WALL]  # 3 odd head processes of 4
    # not a regression, and not a pass either: the A/B measures no more, so what may be slower and is
    # not settled is a doubt, as the judge's last round says (before: a pass, exit 0)
    (wall,) = after.comparison.failures
    assert wall.scope is Scope.WALL and wall.verdict is Verdict.INCONCLUSIVE
    assert wall.note == "after 4 process(es) per side, over threshold but inside the noise of this runner"
    assert after.case.status is Status.INCONCLUSIVE and after.case.reason.startswith(
        "wall: after 4 process(es)"
    )
    # the A/A passes; a latency slower in every head process is a regression
    same = combine([process_step(w, seed=20 + i) for i, w in enumerate(BASE)])
    (aa,) = judge(stored, {name: entry(name, same)}, GateConfig(), "base.json", processes=True)
    assert aa.case.status is Status.PASS, aa.case
    slower = combine([process_step(w * 1.2, seed=20 + i) for i, w in enumerate(BASE)])
    (ab,) = judge(stored, {name: entry(name, slower)}, GateConfig(), "base.json", processes=True)
    assert ab.case.status is Status.REGRESSION and ab.case.reason == "wall regressed", ab.case
