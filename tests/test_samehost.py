"""The same-host judge on synthetic rounds: a change the A/B sees fails, a host offset passes with
its offset shown, a doubt is inconclusive (never a pass), and rounds follow the evidence."""

from __future__ import annotations

import dataclasses
import random

import pytest
from factories import measurement

from kernelgate.config import GateConfig, Policy, Scope
from kernelgate.measure.results import Measurement
from kernelgate.verdict.compare import Comparison, Delta, Verdict, compare, fail_set
from kernelgate.verdict.policy import Case, Status
from kernelgate.verdict.reported import as_run_ends, merged
from kernelgate.verdict.samehost import Decision, Outcome, decide, runner_offset, settle, unsettled
from kernelgate.verdict.settled import SHOWN_OPEN, still_open

CONFIG = GateConfig()  # layers 2.5 %, total 1 %, floor 0.5 µs
LAYERS = {"input": 30.0, "model.0": 100.0, "model.1": 200.0, "model.2": 150.0}


def run(scale: dict[str, float] | None = None, *, process: float = 1.0, seed: int = 0) -> Measurement:
    """One process's record: every layer times ``process`` (a process-level shift), some layers
    scaled further, 20 iterations of 0.1 % noise."""
    rng = random.Random(seed)
    layers = {}
    for name, center in LAYERS.items():
        c = center * process * (scale or {}).get(name, 1.0)
        layers[name] = [round(c * (1 + rng.uniform(-0.001, 0.001)), 3) for _ in range(20)]
    return measurement(layers=layers, total=[round(sum(v[i] for v in layers.values()), 3) for i in range(20)])


def rounds(n: int, scale: dict[str, float] | None = None, seed: int = 0) -> list[Measurement]:
    """``n`` processes, each shifted by up to ±0.2 % as fresh processes on one host are."""
    rng = random.Random(seed)
    return [run(scale, process=1 + rng.uniform(-0.002, 0.002), seed=seed + i) for i in range(n)]


def test_a_change_in_the_head_is_a_regression_named_by_its_layer() -> None:
    baseline = run(process=0.98)  # recorded on a faster host
    head = rounds(3, {"model.1": 1.03}, seed=10)
    screen = compare(baseline, head[0], CONFIG)
    assert screen.failed
    decision = decide(screen, baseline, rounds(3, seed=20), head, CONFIG)
    assert decision is not None and decision.outcome is Outcome.REGRESSION
    assert "model.1" in decision.reason and "model.0" not in decision.reason
    final = merged(screen, decision)
    failing = {d.name for d in final.failures if d.scope is Scope.LAYER}
    assert failing == {"model.1"}
    assert final.failed


def with_env(runs: list[Measurement], **env: str) -> list[Measurement]:
    return [dataclasses.replace(m, environment={**m.environment, **env}) for m in runs]


def test_a_head_that_changes_the_environment_and_slows_nothing_passes_saying_so() -> None:
    # a head whose conftest sets OMP_NUM_THREADS=1: on a GPU the kernels do not move, the reviewer
    # still reads the change in the judge's line
    baseline = run()
    base = with_env(rounds(3, seed=20), torch_threads="16")
    head = with_env(rounds(3, {"model.1": 1.03}, seed=10), torch_threads="1", **{"env.OMP_NUM_THREADS": "1"})
    screen = compare(baseline, head[0], CONFIG)
    passed = decide(screen, baseline, base, with_env(rounds(3, seed=10), **head[0].environment), CONFIG)
    assert passed is not None and passed.outcome is Outcome.PASS
    said = "the head ran in another environment than the base on this runner: "
    assert said + "OMP_NUM_THREADS (unset) -> 1, torch_threads 16 -> 1" in passed.reason
    same = decide(screen, baseline, base, with_env(rounds(3, seed=10), torch_threads="16"), CONFIG)
    assert same is not None and same.outcome is Outcome.PASS and "another environment" not in same.reason
    # a regression says what changed in its failure message (against the stored baseline), not here
    slower = decide(screen, baseline, base, head, CONFIG)
    assert (
        slower is not None
        and slower.outcome is Outcome.REGRESSION
        and "another environment" not in slower.reason
    )


def test_a_host_offset_passes_with_the_offset_shown() -> None:
    baseline = run(process=0.96)  # the baseline's host is 4 % faster on every layer
    head = rounds(3, seed=10)
    screen = compare(baseline, head[0], CONFIG)
    assert screen.failed  # the screen alone would have failed this A/A
    decision = decide(screen, baseline, rounds(3, seed=20), head, CONFIG)
    assert decision is not None and decision.outcome is Outcome.PASS
    assert decision.offset_pct == pytest.approx(100 * (1 / 0.96 - 1), abs=0.5)
    final = merged(screen, decision)
    assert not final.failed
    assert all("not from this change" in d.note for d in final.deltas if d.name in ("model.0", "model.1"))


def test_host_coupled_layers_are_judged_by_the_ab_alone() -> None:
    baseline = run({"input": 0.7})  # the H2D copy was 40 % faster on the baseline's host
    head = rounds(3, seed=10)
    screen = compare(baseline, head[0], CONFIG)
    assert [d.name for d in screen.failures if d.scope is Scope.LAYER] == ["input"]
    decision = decide(screen, baseline, rounds(3, seed=20), head, CONFIG)
    assert decision is not None and decision.outcome is Outcome.PASS


def test_a_layer_far_off_the_baseline_while_base_and_head_agree_is_inconclusive() -> None:
    baseline = run()
    head = rounds(3, {"model.2": 1.5}, seed=10)  # e.g. a -p plugin on both sides, a runner's library
    base = rounds(3, {"model.2": 1.5}, seed=20)
    screen = compare(baseline, head[0], CONFIG)
    decision = decide(screen, baseline, base, head, CONFIG)
    assert decision is not None and decision.outcome is Outcome.INCONCLUSIVE
    assert "model.2 +50" in decision.reason
    final = merged(screen, decision)
    # the layer far off the baseline is the doubt, shown as one (not "not from this change")
    assert "model.2" in {d.name for d in final.failures if d.verdict is Verdict.INCONCLUSIVE}
    assert final.failed  # on_inconclusive = "fail" by default


def test_inconclusive_fails_only_by_policy() -> None:
    assert Verdict.INCONCLUSIVE in fail_set(GateConfig())
    assert Verdict.INCONCLUSIVE not in fail_set(GateConfig(on_inconclusive=Policy.WARN))


def test_never_decided_on_fewer_than_min_rounds() -> None:
    baseline = run()
    head = rounds(2, {"model.1": 1.5}, seed=10)
    screen = compare(baseline, head[0], CONFIG)
    assert decide(screen, baseline, rounds(2, seed=20), head, CONFIG) is None
    assert decide(screen, baseline, rounds(3, seed=20), [*head, run({"model.1": 1.5})], CONFIG) is not None


def test_a_grey_zone_change_asks_for_more_rounds_then_decides() -> None:
    baseline = run()
    # model.0 +2.3 % with processes ±0.6 %: under the 2.5 % limit, but not by more than the spread
    rng = random.Random(3)
    head = [run({"model.0": 1.023}, process=1 + rng.uniform(-0.006, 0.006), seed=i) for i in range(6)]
    base = [run(process=1 + rng.uniform(-0.006, 0.006), seed=20 + i) for i in range(6)]
    screen = compare(baseline, head[0], CONFIG)
    assert decide(screen, baseline, base[:3], head[:3], CONFIG) is None  # not settled: more rounds
    decision = decide(screen, baseline, base, head, CONFIG)
    assert decision is not None and decision.outcome is not Outcome.REGRESSION
    assert decision.rounds == 6


def test_a_change_inside_the_process_noise_is_inconclusive_at_the_last_round() -> None:
    baseline = run()
    # processes that move by ±6 % on both sides: the A/B itself is unstable
    shifts = (0.94, 1.06, 1.0, 0.95, 1.05, 1.0)
    head = [run({"model.1": 1.04}, process=f, seed=i) for i, f in enumerate(shifts)]
    base = [run(process=f, seed=10 + i) for i, f in enumerate(shifts)]
    screen = compare(baseline, head[0], CONFIG)
    decision = decide(screen, baseline, base, head, CONFIG)
    assert decision is not None and decision.outcome is Outcome.INCONCLUSIVE
    assert "inside the noise" in decision.reason


def test_settle_on_cold_start_phases_skips_the_offset_check() -> None:
    baseline = run()
    head = run({"model.2": 1.5})
    screen = compare(baseline, head, CONFIG)
    ab = compare(head, head, CONFIG)
    assert settle(screen, ab, 3, final=True, check_offset=True).outcome is Outcome.INCONCLUSIVE
    assert settle(screen, ab, 3, final=True, check_offset=False).outcome is Outcome.PASS


def test_unsettled_is_inconclusive_with_its_reason() -> None:
    screen = compare(run(), run({"model.1": 1.5}), CONFIG)
    decision = unsettled(screen.benchmark, "git cannot resolve base 'nope'")
    final = merged(screen, decision)
    assert final.failed
    assert {d.verdict for d in final.failures} == {Verdict.INCONCLUSIVE}
    assert "git cannot resolve" in final.notes[-1]


def test_runner_offset_leaves_out_host_coupled_layers() -> None:
    baseline = run()
    head = run({"input": 2.0, "model.0": 1.01, "model.1": 1.01, "model.2": 1.01})
    assert runner_offset(baseline, head, CONFIG) == pytest.approx(1.0, abs=0.2)


def test_the_screen_suspects_at_half_the_thresholds_so_a_faster_runner_hides_no_change() -> None:
    baseline = run()
    head = run({"model.1": 1.03}, process=0.985)  # +3 % on a runner 1.5 % faster: +1.5 % on screen
    assert not compare(baseline, head, CONFIG).failed
    assert compare(baseline, head, CONFIG.screening()).failed
    assert CONFIG.screening().threshold("a", "b", Scope.LAYER, "model.1").rel == pytest.approx(0.0125)
    assert CONFIG.threshold("a", "b", Scope.LAYER, "model.1").rel == pytest.approx(0.025)
    screen = compare(baseline, head, CONFIG)
    base, changed = rounds(6, seed=20), rounds(6, {"model.1": 1.03}, seed=30)
    decision = decide(screen, baseline, base, changed, CONFIG)
    assert decision is not None and decision.outcome is Outcome.REGRESSION
    final = merged(compare(baseline, head, CONFIG), decision)
    assert [d.name for d in final.failures if d.scope is Scope.LAYER] == ["model.1"]


def test_on_a_cpu_an_offset_from_the_baseline_is_no_doubt() -> None:
    baseline = dataclasses.replace(run(), arch="cpu-x86-64-amd-epyc")
    head = [dataclasses.replace(m, arch="cpu-x86-64-amd-epyc") for m in rounds(3, {"model.2": 1.5}, seed=10)]
    base = [dataclasses.replace(m, arch="cpu-x86-64-amd-epyc") for m in rounds(3, {"model.2": 1.5}, seed=20)]
    screen = compare(baseline, head[0], CONFIG)
    decision = decide(screen, baseline, base, head, CONFIG)
    assert decision is not None and decision.outcome is Outcome.PASS  # on a GPU: inconclusive (above)


def test_a_figure_that_may_be_faster_is_no_doubt() -> None:
    """Over its threshold but inside the noise, and faster: no regression can hide there (on an H100
    A/A a latency of -5.1 % inside the noise was called inconclusive and failed the run)."""
    base, head = rounds(3, seed=20), rounds(3, seed=10)
    ab = compare(base[0], head[0], CONFIG)
    faster = dataclasses.replace(
        ab.deltas[1], verdict=Verdict.AMBIGUOUS, current_us=ab.deltas[1].baseline_us * 0.9
    )
    slower = dataclasses.replace(faster, current_us=ab.deltas[1].baseline_us * 1.1)
    screen = compare(base[0], head[0], CONFIG)
    for delta, outcome in ((faster, Outcome.PASS), (slower, Outcome.INCONCLUSIVE)):
        found = settle(
            screen, dataclasses.replace(ab, deltas=(ab.deltas[0], delta, *ab.deltas[2:])), 3, final=True
        )
        assert found is not None and found.outcome is outcome, delta


def test_a_suspect_no_screen_figure_failed_is_inconclusive_when_the_judge_cannot_settle_it() -> None:
    """A suspect by its structure, or by a baseline without a host side, fails nothing on the screen:
    the judge's doubt still makes the benchmark inconclusive, on its total, never a pass."""
    baseline = run()
    screen = compare(baseline, run(seed=10), CONFIG)
    assert not screen.failed
    final = merged(
        screen, unsettled(screen.benchmark, "no git repository at /x: the base cannot be checked out")
    )
    (doubt,) = [d for d in final.deltas if d.verdict is Verdict.INCONCLUSIVE]
    assert doubt.scope is Scope.TOTAL and doubt.note.startswith("no git repository at /x")
    assert final.failed  # on_inconclusive = "fail", the default
    assert Case.of(final).status is Status.INCONCLUSIVE
    # settled, the same suspect passes
    passed = decide(screen, baseline, rounds(3, seed=20), rounds(3, seed=30), CONFIG)
    assert passed is not None and passed.outcome is Outcome.PASS
    assert not merged(screen, passed).failed


def test_a_figure_the_screen_left_in_the_noise_and_the_judge_settled_is_unchanged_with_its_a_b() -> None:
    """Against the stored baseline a figure may be over its threshold but inside the noise (ambiguous,
    "not settled" in the reports); where base and head on this runner agree on it, the judge settled
    it: unchanged, with the A/B in the note. One the A/B did not measure stays ambiguous."""
    baseline = run()
    head = rounds(3, seed=10)
    screen = compare(baseline, head[0], CONFIG)
    at = next(i for i, d in enumerate(screen.deltas) if d.scope is Scope.LAYER and d.name == "model.1")
    noisy = dataclasses.replace(
        screen.deltas[at], verdict=Verdict.AMBIGUOUS, current_us=screen.deltas[at].baseline_us * 1.5
    )
    unmeasured = dataclasses.replace(noisy, name="model.9", layer="model.9")
    screen = dataclasses.replace(
        screen, deltas=(*screen.deltas[:at], noisy, unmeasured, *screen.deltas[at + 1 :])
    )
    decision = decide(screen, baseline, rounds(3, seed=20), head, CONFIG)
    assert decision is not None and decision.outcome is Outcome.PASS
    shown = {d.name: d for d in merged(screen, decision).deltas if d.scope is Scope.LAYER}
    assert shown["model.1"].verdict is Verdict.UNCHANGED, shown["model.1"]
    assert shown["model.1"].note.startswith("not from this change: base -> head "), shown["model.1"].note
    assert shown["model.9"].verdict is Verdict.AMBIGUOUS  # nothing measured it on this runner


def _decided(outcome: Outcome, ab_deltas: tuple[Delta, ...], screen: Comparison) -> Decision:
    ab = dataclasses.replace(screen, deltas=ab_deltas)
    return Decision(screen.benchmark, outcome, f"the judge: {outcome.value}", ab, 6)


def test_a_kernel_the_a_b_confirms_slower_makes_the_judge_s_pass_a_regression_naming_it() -> None:
    """The judge weighs layers, totals, host times and the latency; a kernel that the screen and base ->
    head on this runner both find slower past its threshold still fails the run (its row stays
    REGRESSED), so the judge's line names it instead of reading "pass: base and head agree"."""
    kernels = {"model.1.cv1.conv :: gemm": 40.0, "model.1.cv2.conv :: gemm": 60.0}
    baseline = measurement(layers=LAYERS, kernels=kernels)
    slower = measurement(layers=LAYERS, kernels={**kernels, "model.1.cv1.conv :: gemm": 60.0})
    screen = compare(baseline, slower, CONFIG)
    (row,) = [d for d in screen.failures if d.scope is Scope.KERNEL]
    passed = _decided(Outcome.PASS, screen.deltas, screen)  # the A/B: the same kernel slower
    shown = merged(screen, passed)
    assert shown.failed and {d.scope for d in shown.failures} == {Scope.KERNEL}
    ended = as_run_ends(passed, shown)
    assert ended.outcome is Outcome.REGRESSION
    assert ended.reason.startswith("base -> head on this runner past their thresholds, though the layers")
    assert row.figure in ended.reason and "+50.0 %" in ended.reason
    assert ended.reason.endswith("the judge: pass")
    # the A/B found it unchanged: the row is the runner's offset, the pass stands
    same = _decided(Outcome.PASS, compare(baseline, baseline, CONFIG).deltas, screen)
    assert not merged(screen, same).failed and as_run_ends(same, merged(screen, same)) is same
    # a regression or a doubt is as the judge said
    for outcome in (Outcome.REGRESSION, Outcome.INCONCLUSIVE):
        decided = _decided(outcome, screen.deltas, screen)
        assert as_run_ends(decided, merged(screen, decided)) is decided


def test_only_a_figure_base_and_head_settled_leaves_the_noise_and_only_a_slower_doubt_is_shown() -> None:
    """The A/B's figure, one the screen left in the noise: unchanged, faster, or in the noise and faster
    settles it (unchanged); in the noise and slower does not (stays as the screen had it). Where the
    suspect is inconclusive, a slower doubt the screen did not measure at all is a row of its own."""
    baseline = run()
    screen = compare(baseline, run(seed=10), CONFIG)
    at = next(i for i, d in enumerate(screen.deltas) if d.name == "model.1")
    one = screen.deltas[at]
    noisy = dataclasses.replace(one, verdict=Verdict.AMBIGUOUS, current_us=(one.baseline_us or 0) * 1.5)
    screen = dataclasses.replace(screen, deltas=(*screen.deltas[:at], noisy, *screen.deltas[at + 1 :]))
    others = tuple(d for d in screen.deltas if d.name != "model.1")

    def shown_as(pair: Delta, outcome: Outcome = Outcome.PASS) -> Verdict:
        final = merged(screen, _decided(outcome, (*others, pair), screen))
        return next(d for d in final.deltas if d.name == "model.1").verdict

    base_us = one.baseline_us or 0.0
    faster = dataclasses.replace(one, verdict=Verdict.AMBIGUOUS, current_us=base_us * 0.95)
    slower = dataclasses.replace(one, verdict=Verdict.AMBIGUOUS, current_us=base_us * 1.05)
    assert shown_as(dataclasses.replace(one, verdict=Verdict.UNCHANGED)) is Verdict.UNCHANGED
    assert shown_as(dataclasses.replace(one, verdict=Verdict.IMPROVED, current_us=base_us * 0.9)) is (
        Verdict.UNCHANGED
    )
    assert shown_as(faster) is Verdict.UNCHANGED
    assert shown_as(slower) is Verdict.AMBIGUOUS
    assert shown_as(slower, Outcome.INCONCLUSIVE) is Verdict.INCONCLUSIVE

    # a host time of model.2 that only the A/B measured (a baseline without a host side), in doubt
    host = dataclasses.replace(
        one, scope=Scope.HOST, name="model.2", layer="model.2", current_us=base_us * 1.05
    )
    host = dataclasses.replace(host, verdict=Verdict.AMBIGUOUS)
    final = merged(screen, _decided(Outcome.INCONCLUSIVE, (*others, one, host), screen))
    (doubt,) = [d for d in final.deltas if d.verdict is Verdict.INCONCLUSIVE]
    assert (doubt.scope, doubt.name, doubt.current_us) == (Scope.HOST, "model.2", host.current_us)
    assert not [d for d in final.deltas if d.scope is Scope.TOTAL and d.verdict is Verdict.INCONCLUSIVE]


def test_a_doubt_the_runners_two_speeds_explain_is_not_the_one_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    """The judge clears a doubt that the runner's two speeds explain (kernelgate.verdict.bimodal): where
    the suspect is inconclusive for another reason (a layer further off the stored baseline than the
    runner's offset), the reports show that layer in doubt, not the cleared figure."""
    baseline = run()
    screen = compare(baseline, run({"model.1": 1.3}, seed=10), CONFIG)
    (failing,) = [d for d in screen.failures if d.scope is Scope.LAYER]
    assert failing.name == "model.1"
    failed = [(d.scope, d.name) for d in screen.failures]  # model.1, and the total with it
    same = tuple(dataclasses.replace(d, verdict=Verdict.UNCHANGED) for d in screen.deltas)
    host = dataclasses.replace(failing, scope=Scope.HOST, name="model.2", layer="model.2")
    host = dataclasses.replace(host, verdict=Verdict.AMBIGUOUS)
    decision = _decided(Outcome.INCONCLUSIVE, (*same, host), screen)
    monkeypatch.setattr(
        "kernelgate.verdict.reported.explain",
        lambda d, processes: "two speeds" if d.name == "model.2" else None,
    )
    doubts = [(d.scope, d.name) for d in merged(screen, decision).deltas if d.verdict is Verdict.INCONCLUSIVE]
    assert set(doubts) == set(failed) and (Scope.HOST, "model.2") not in doubts
    monkeypatch.setattr("kernelgate.verdict.reported.explain", lambda d, processes: None)
    doubts = [(d.scope, d.name) for d in merged(screen, decision).deltas if d.verdict is Verdict.INCONCLUSIVE]
    assert doubts == [(Scope.HOST, "model.2")]  # unexplained, it is the doubt; model.1 agreed on this runner


def test_the_round_line_names_at_most_six_open_figures() -> None:
    """A host-side move opens every layer (19 in yolov8n): the judge's round line names six and counts
    the rest, so a CI log keeps one readable line per round."""
    names = [f"model.{i}" for i in range(10)]

    def process(shift: float, seed: int) -> Measurement:
        rng = random.Random(seed)
        layers = {n: [100.0 * shift * (1 + rng.uniform(-0.001, 0.001)) for _ in range(20)] for n in names}
        return measurement(layers=layers, total=[sum(v[i] for v in layers.values()) for i in range(20)])

    base = [process(s, i) for i, s in enumerate((1.0, 1.02, 0.98))]
    head = [process(s, 10 + i) for i, s in enumerate((1.03, 1.0, 1.04))]  # +2.3 %: under 2.5 %, not settled
    line = still_open(base, head, CONFIG)
    assert line.startswith("within the noise of their limits: total +"), line
    assert line.count(" %") == SHOWN_OPEN and line.endswith(" and 5 more"), line  # total and 10 layers
